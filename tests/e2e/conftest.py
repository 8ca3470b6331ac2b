"""A real SQLite rating through the CLI, made once for the report tests (report, compare,
and the browser check)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BGBENCH = [sys.executable, "-m", "bgbench"]


def bgbench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*BGBENCH, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="session")
def sqlite_rating(tmp_path_factory) -> tuple[Path, str]:
    """(results directory, rating id) of `bgbench rate --store sqlite` through two local
    agents, T up to 8, one-second search runs and two-second finals."""
    where = tmp_path_factory.mktemp("sqlite-rating")
    proc = bgbench(
        "rate", "--store", "sqlite", "--delta-search", "1", "--delta", "2",
        "--max-threads", "8", "--users", "400", "--results", str(where / "results"),
        "-p", f"store.options.path={where / 'bg.sqlite'}", "-p", "rating.final_runs=2",
        "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return where / "results", json.loads(proc.stdout)["rating_id"]
