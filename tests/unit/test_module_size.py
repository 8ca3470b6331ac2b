"""Every hand-written Python module stays readable in one sitting: at most 500 lines.
(Complexity is ruff's C901 at 20, the import rules are import-contracts.toml.)"""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 500


def hand_written_modules() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return [ROOT / name for name in listed if not name.endswith(("_pb2.py", "_pb2_grpc.py"))]


def test_no_module_is_over_500_lines():
    modules = hand_written_modules()
    assert len(modules) > 300  # the listing found the repository's modules
    long = {
        str(path.relative_to(ROOT)): n
        for path in modules
        if path.exists() and (n := len(path.read_text().splitlines())) > LIMIT
    }
    assert long == {}
