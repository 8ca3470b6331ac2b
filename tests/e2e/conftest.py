"""Fixtures of the end-to-end tests: a real SQLite rating through the CLI, made once for the
report tests (report, compare, and the browser check); one real experiment's logs; a deck."""

import json
import shutil
import signal
from pathlib import Path

import pytest

from tests.conftest import made_once
from tests.e2e.live_helpers import end
from tests.e2e.test_deck import Deck
from tests.helpers import bgbench


@pytest.fixture(scope="session")
def sqlite_rating(pytestconfig, tmp_path_factory) -> tuple[Path, str]:
    """(results directory, rating id) of `bgbench rate --store sqlite` through two local
    agents, T up to 8, one-second search runs and two-second finals. The rating runs once
    per test run; each xdist worker gets a copy of its results directory of its own."""

    def rate(where: Path) -> str:
        proc = bgbench(
            "rate", "--store", "sqlite", "--delta-search", "1", "--delta", "2",
            "--max-threads", "8", "--users", "400", "--results", str(where / "results"),
            "-p", f"store.options.path={where / 'bg.sqlite'}", "-p", "rating.final_runs=2",
            "--json",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        rating_id: str = json.loads(proc.stdout)["rating_id"]
        return rating_id

    made, rating_id = made_once(pytestconfig, "sqlite-rating", rate)
    where = tmp_path_factory.mktemp("sqlite-rating")
    shutil.copytree(made, where, dirs_exist_ok=True)
    return where / "results", rating_id


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    """The logs of one real experiment (one agent with one load process, so one log), for
    the tests that damage or forge them."""
    tmp = tmp_path_factory.mktemp("run")
    proc = bgbench(
        "run", "--store", "sqlite", "--threads", "2", "--duration", "1", "--agents", "1",
        "--processes", "1", "--users", "200", "--mix", "high", "--results", str(tmp / "res"),
        "-p", f"store.options.path={tmp / 'db.sqlite'}",
        "-p", "agents.heartbeat_timeout=60",  # a busy machine may load slowly
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (log,) = (tmp / "res").rglob("log-f0.bglog")
    return log.parent


@pytest.fixture
def experiment(real_run, tmp_path) -> Path:
    """A copy of `real_run`'s experiment directory, this test's to damage."""
    copy = tmp_path / real_run.name
    shutil.copytree(real_run, copy)
    return copy


@pytest.fixture
def deck(tmp_path):
    """A deck on a free loopback port (ended by its PID after the test)."""
    d = Deck(tmp_path)
    try:
        yield d.started()
    finally:
        end(d.proc, signal.SIGTERM)
