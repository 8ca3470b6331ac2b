"""What the server benchmarks share: deploy/local/servers.py (and its fresh PostgreSQL
database) and `bgbench ... --json` in a subprocess."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("servers", ROOT / "deploy/local/servers.py")
servers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(servers)


def bgbench(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "bgbench", *args, "--json"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


new_database = servers.new_database
