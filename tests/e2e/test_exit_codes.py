"""Every documented exit code through a real `bgbench` process: 0 done, 2 bad input (one
line naming what was wrong), 3 an infrastructure fault (recorded as such), 130 interrupted."""

import contextlib
import json
import os
import signal
import subprocess
from functools import partial
from pathlib import Path

import psutil
import pytest

from bgbench.coordinator.storage.results import ResultsStore
from tests import helpers
from tests.conftest import servers
from tests.helpers import BGBENCH

bgbench = partial(helpers.bgbench, timeout=180)


def one_error_line(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bgbench:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


wait_until = partial(helpers.wait_until, timeout=120)


def sqlite_run(tmp: Path, *extra: str) -> list[str]:
    return [
        "run", "--store", "sqlite", "-p", "usercount=400", "--threads", "4",
        "--results", str(tmp), "-p", f"store.options.path={tmp / 'bg.sqlite'}", *extra,
    ]  # fmt: skip


class Running:
    """A `bgbench` started in the background; killed with its agents on the way out."""

    def __init__(self, args: list[str], cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            [*BGBENCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd
        )
        self.children: list[psutil.Process] = []

    def agents(self) -> list[psutil.Process]:
        found = []
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            try:
                if "bgbench.worker.agent" in " ".join(child.cmdline()):
                    found.append(child)
            except psutil.Error:
                continue
        self.children = list({*self.children, *found})
        return found

    def finish(self, timeout: float = 120) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def __enter__(self) -> "Running":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=30)
        for child in self.children:
            with contextlib.suppress(psutil.Error):
                child.kill()


def logs_under(directory: Path) -> list[Path]:
    return list(directory.rglob("log-f*.bglog"))


def test_a_finished_run_exits_0_and_a_bad_flag_2(tmp_path):
    ok = bgbench(*sqlite_run(tmp_path, "--duration", "1", "--json"))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["fault"] == ""
    bad = bgbench("run", "--threads", "many")
    assert "--threads" in one_error_line(bad)


def test_a_killed_agent_ends_the_run_with_exit_3_recorded_as_a_fault(tmp_path):
    with Running(sqlite_run(tmp_path, "--duration", "120", "--json")) as run:
        wait_until(lambda: len(logs_under(tmp_path)) == 2, "both agents running")
        victim = run.agents()[0]
        victim.kill()
        code, out, err = run.finish()
    assert code == 3, err
    result = json.loads(out)
    assert result["fault"] and "Traceback" not in err
    recorded = json.loads(
        (tmp_path / result["experiment_id"] / f"{result['experiment_id']}.json").read_text()
    )
    assert recorded["fault"] == result["fault"]  # recorded as what it was, not a verdict
    assert not recorded["passed"]


def test_a_stopped_postgres_ends_the_run_with_exit_3(tmp_path):
    pg_dir = tmp_path / "pg"
    server = servers.start("postgres", pg_dir)
    try:
        dsn = servers.new_database(server)
        args = [
            "run", "--store", "postgres", "--users", "400", "--threads", "4",
            "--duration", "120", "--results", str(tmp_path / "res"), "--json",
            "-p", f"store.options.dsn={dsn}",
        ]  # fmt: skip
        with Running(args) as run:
            wait_until(lambda: len(logs_under(tmp_path / "res")) == 2, "both agents running")
            servers.stop(pg_dir)
            code, out, err = run.finish(timeout=180)
    finally:
        servers.stop(pg_dir)
    assert code == 3, err
    assert json.loads(out)["fault"], out


def test_an_interrupted_run_exits_130_and_leaves_no_agent(tmp_path):
    with Running(sqlite_run(tmp_path, "--duration", "120")) as run:
        wait_until(lambda: len(logs_under(tmp_path)) == 2, "both agents running")
        agents = run.agents()
        assert len(agents) == 2
        run.proc.send_signal(signal.SIGINT)
        code, _, err = run.finish()
        assert code == 130, err
        assert "interrupted" in err and "Traceback" not in err
        _gone, alive = psutil.wait_procs(agents, timeout=30)
        assert not alive, alive


def test_a_killed_agent_stops_a_rating_with_exit_3_and_an_absolute_resume_hint(tmp_path):
    args = [
        "rate", "--store", "sqlite", "--users", "400", "--delta-search", "60",
        "--results", "res", "-p", "store.options.path=bg.sqlite",
    ]  # fmt: skip
    with Running(args, cwd=tmp_path) as run:
        wait_until(lambda: len(logs_under(tmp_path / "res")) == 2, "both agents running")
        run.agents()[1].kill()
        code, _, err = run.finish()
    assert code == 3, err
    hint = next(line for line in err.splitlines() if "--resume" in line)
    assert f"--results {tmp_path / 'res'}" in hint, hint
    (rating,) = ResultsStore(tmp_path / "res").ratings()
    assert rating["status"] == "failed" and "infrastructure" in rating["message"]


@pytest.mark.parametrize(
    ("param", "field"),
    [
        ("run.seed=-1", "run.seed"),
        ("run.seed=18446744073709551616", "run.seed"),
        ("bg.database.seed=-1", "bg.database.seed"),
        ("thinktime=Infinity", "bg.workload.thinktime"),
        ("interarrivaltime=NaN", "bg.workload.interarrivaltime"),
        ("usercount=1000000000000", "bg.database.usercount"),
        ("usercount=1000000000", "bg.database.usercount"),
        ("zipfianmean=-0.5", "bg.workload.zipfianmean"),
    ],
)
def test_values_that_would_fail_later_are_refused_up_front(tmp_path, param, field):
    for command in (["check-config", str(empty_config(tmp_path))], sqlite_run(tmp_path)):
        line = one_error_line(bgbench(*command, "-p", param))
        assert field in line, line
    assert not logs_under(tmp_path)  # nothing ran


def empty_config(tmp_path: Path) -> Path:
    path = tmp_path / "settings.toml"
    path.write_text("")
    return path


def test_fewer_threads_than_fragments_are_refused(tmp_path):
    """Agents the user asked for are kept; left to bgbench, one thread gets one agent."""
    line = one_error_line(bgbench(*sqlite_run(tmp_path), "--threads", "1", "--agents", "2"))
    assert "run.threadcount" in line and "2 fragments" in line
    proc = bgbench(*sqlite_run(tmp_path / "auto"), "--threads", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    agents = json.loads(proc.stdout)["agents"]
    assert [(a["threads"], a["load_processes"]) for a in agents] == [(1, 1)]


def test_bad_files_get_one_line_each(tmp_path):
    config = tmp_path / "latin1.toml"
    config.write_bytes("[run]\n# caf\xe9\nseed = 2\n".encode("latin-1"))
    assert str(config) in one_error_line(bgbench("check-config", str(config)))
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    line = one_error_line(bgbench(*sqlite_run(a_file), "--duration", "1"))
    assert str(a_file) in line and "directory" in line
    line = one_error_line(bgbench("results", "--results", str(tmp_path / "nothing-here")))
    assert "no results store" in line
    assert not (tmp_path / "nothing-here").exists()  # looking created nothing


def test_secrets_are_never_recorded_or_printed(tmp_path):
    token = "agent-token-" + "s3cr3t" * 4
    password = "pg-pass-" + "hunter2" * 3
    dsn = f"postgresql://bg:{password}@127.0.0.1:1/bg"
    shown = bgbench(
        "check-config", str(empty_config(tmp_path)), "-p", f"agents.token={token}",
        "-p", "store.name=postgres", "-p", f"store.options.dsn={dsn}",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert token not in shown.stdout and password not in shown.stdout
    assert '"token": "***"' in shown.stdout and "bg:***@127.0.0.1" in shown.stdout

    rated = bgbench(
        "rate", "--store", "model", "--results", str(tmp_path), "--json",
        "-p", f"agents.token={token}",
    )  # fmt: skip
    assert rated.returncode == 0, rated.stderr
    rating_id = json.loads(rated.stdout)["rating_id"]
    export = tmp_path / "export.json"
    exported = bgbench(
        "results", "export", rating_id, "--format", "json", "-o", str(export),
        "--results", str(tmp_path),
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert json.loads(export.read_text())["config"]["agents"]["token"] == "***"
    shown = bgbench("results", "show", rating_id, "--results", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    for text in (rated.stdout, rated.stderr, shown.stdout):
        assert token not in text


def test_a_rating_resumed_from_elsewhere_uses_its_own_results(tmp_path):
    """Started with a relative --results in one directory, killed, resumed from another
    with the absolute path: the original record is continued, nothing new appears."""
    origin, elsewhere = tmp_path / "a", tmp_path / "b"
    origin.mkdir()
    elsewhere.mkdir()
    args = [
        "rate", "--store", "sqlite", "--users", "400", "--objective", "socialites",
        "--delta-search", "1", "--delta", "1", "--max-threads", "16", "--results", "res",
        "-p", "store.options.path=bg.sqlite", "-p", "sla.beta_ms=2", "-p", "rating.final_runs=2",
    ]  # fmt: skip
    with Running(args, cwd=origin) as run:
        wait_until(lambda: _experiments(origin / "res") >= 2, "two experiments recorded")
        run.agents()
        os.kill(run.proc.pid, signal.SIGKILL)  # no chance to clean up or mark anything
        run.proc.communicate(timeout=30)
    (rating,) = ResultsStore(origin / "res").ratings()
    assert rating["status"] == "running"
    done_before = _experiments(origin / "res")

    resumed = bgbench(
        "rate", "--resume", rating["id"], "--results", str(origin / "res"), "--json",
        cwd=elsewhere, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    all_runs = summary["experiments_unique"] + summary["experiments_repeated"]
    assert summary["experiments_run_now"] < all_runs  # replayed some
    assert any(f"resumed: {done_before}" in n for n in summary["notes"]), summary["notes"]
    assert not (elsewhere / "res").exists() and not (elsewhere / "bg.sqlite").exists()
    (after,) = ResultsStore(origin / "res").ratings()
    assert after["id"] == rating["id"] and after["status"] == "done"


def _experiments(results: Path) -> int:
    if not (results / "bgbench.sqlite").exists():
        return 0
    return sum(r["runs"] for r in ResultsStore(results).ratings())
