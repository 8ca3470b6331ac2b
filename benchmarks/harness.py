"""What the server benchmarks share: deploy/local/servers.py, `bgbench ... --json` in a
subprocess, and a fresh PostgreSQL database."""

import importlib.util
import json
import subprocess
import sys
import uuid
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


def new_database(pg: dict) -> str:
    """A new empty database on a running PostgreSQL; its libpq connection string."""
    import psycopg

    name = "bg_" + uuid.uuid4().hex[:10]
    base = f"host=127.0.0.1 port={pg['port']} user=postgres"
    with psycopg.connect(f"{base} dbname=postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{base} dbname={name}"
