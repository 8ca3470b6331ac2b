"""Campaigns through the CLI: a real campaign over SQLite and a PostgreSQL the campaign
starts, its coordinator killed mid-way and resumed; servers stopped however it ends; a
failed job recorded and passed over."""

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from bgbench.coordinator.campaign import load_campaign
from tests import helpers
from tests.helpers import BGBENCH

SMALL = """
campaign: two-stores-two-mixes
templates:
  quick:
    sla: {delta_search_s: 1, delta_s: 1}
    rating: {objective: soar, max_threads: 4, final_runs: 2, repeats: 1}
    agents: {local: 1, processes: 2}
  sqlite:
    extends: quick
    store: {name: sqlite, options: {path: "DATA/${mix}.sqlite"}}
  postgres:
    extends: quick
    store: {name: postgres}
    server: {kind: postgres}
jobs:
  - extends: ${store}
    foreach: {store: [sqlite, postgres], mix: [low, high]}
    params: {mix: "${mix}", usercount: 400}
"""


bgbench = partial(helpers.bgbench, timeout=600)


wait_until = partial(helpers.wait_until, timeout=240.0)


def query(results: Path, sql: str, *args) -> list[sqlite3.Row]:
    if not (results / "bgbench.sqlite").exists():
        return []
    db = sqlite3.connect(results / "bgbench.sqlite", timeout=30)
    db.row_factory = sqlite3.Row
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []
    finally:
        db.close()


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


def server_pids(results: Path) -> set[int]:
    """Every server PID a campaign in `results` recorded."""
    pids: set[int] = set()
    for state in results.glob("C*/servers/*/server.json"):
        info = json.loads(state.read_text())
        pids.update(info.get("pids") or [info["pid"]])
    for row in query(results, "SELECT servers_json FROM campaign_jobs"):
        for server in json.loads(row["servers_json"]):
            pids.update(server.get("pids") or [])
    return pids


@pytest.fixture
def killer():
    """Kills what a test started and left running (a finalizer, by PID)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


@pytest.fixture
def stops_servers(tmp_path):
    """Stops any server a campaign of the test left behind (so a failing test leaks none)."""
    yield
    sys.path.insert(0, str(Path(__file__).parents[2] / "deploy" / "local"))
    from servers import stop  # type: ignore[import-not-found]

    for state in tmp_path.glob("**/servers/*/server.json"):
        stop(state.parent)


def small_campaign(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL.replace("DATA", str(tmp_path / "data")))
    return path


def test_check_lists_the_unfolded_jobs_and_names_an_invalid_one(tmp_path):
    path = small_campaign(tmp_path)
    proc = bgbench("campaign", "check", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "4 ratings" in proc.stdout and "4 valid jobs" in proc.stdout
    assert proc.stdout.count("postgres") >= 4  # the store column and the foreach column
    bad = tmp_path / "bad.yaml"
    expression = "'${= 0 if mix == \"high\" else 8}'"
    bad.write_text(path.read_text() + f"    rating: {{max_threads: {expression}}}\n")
    proc = bgbench("campaign", "check", str(bad))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert "job 2 (store=sqlite mix=high): rating.max_threads:" in lines[0], lines
    assert f"{bad}:19" in lines[0], lines  # the line the job sets it on
    assert lines[-1] == "bgbench: error: 2 of 4 jobs are invalid", lines
    # `run` refuses it before anything starts, and records nothing
    proc = bgbench("campaign", "run", str(bad), "--results", str(tmp_path / "r"))
    assert proc.returncode == 2 and "job 2 (store=sqlite mix=high)" in proc.stderr
    assert query(tmp_path / "r", "SELECT * FROM campaigns") == []


def test_a_killed_campaign_resumes_without_rerunning_a_finished_rating(
    tmp_path, killer, stops_servers
):
    path = small_campaign(tmp_path)
    results = tmp_path / "results"
    log = tmp_path / "coordinator.log"
    with log.open("w") as sink:
        coordinator = subprocess.Popen(
            [*BGBENCH, "campaign", "run", str(path), "--results", str(results)],
            stdout=sink, stderr=sink, start_new_session=True,
        )  # fmt: skip
    killer.append(coordinator.pid)

    def third_job_mid_rating() -> bool:
        rows = query(
            results,
            "SELECT count(*) AS n FROM campaign_jobs j JOIN experiments e"
            " ON e.rating_id = j.rating_id WHERE j.seq = 3",
        )
        return bool(rows) and rows[0]["n"] >= 1

    wait_until(third_job_mid_rating, "job 3 (PostgreSQL) to record an experiment", log=log)
    os.kill(coordinator.pid, signal.SIGKILL)  # the coordinator only: no chance to clean up
    coordinator.wait(30)

    before = {r["seq"]: dict(r) for r in query(results, "SELECT * FROM campaign_jobs")}
    assert [before[s]["status"] for s in (1, 2, 3, 4)] == ["done", "done", "running", "pending"]
    finished = {
        r["rating_id"]: r["n"]
        for r in query(
            results,
            "SELECT rating_id, count(*) AS n FROM experiments GROUP BY rating_id",
        )
    }
    pg_pids = server_pids(results)
    assert pg_pids and all(running(p) for p in pg_pids)  # left behind by the killed one
    (campaign_id,) = [r["id"] for r in query(results, "SELECT id FROM campaigns")]

    proc = bgbench("campaign", "run", "--resume", campaign_id, "--results", str(results), "--json")
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    assert [j["status"] for j in outcome["jobs"]] == ["done"] * 4, outcome
    assert "using postgres postgres again" in proc.stderr

    after = {r["seq"]: dict(r) for r in query(results, "SELECT * FROM campaign_jobs")}
    for seq in (1, 2, 3):  # the same ratings: none started afresh
        assert after[seq]["rating_id"] == before[seq]["rating_id"]
    ratings = query(results, "SELECT id, status, config_json FROM ratings")
    assert len(ratings) == 4 and {r["status"] for r in ratings} == {"done"}
    for seq in (1, 2):  # finished before the kill: not one experiment added
        rid = before[seq]["rating_id"]
        n = query(results, "SELECT count(*) AS n FROM experiments WHERE rating_id = ?", rid)
        assert n[0]["n"] == finished[rid]
    rid3 = before[3]["rating_id"]
    ids = [
        json.loads(r["result_json"])["experiment_id"]
        for r in query(results, "SELECT result_json FROM experiments WHERE rating_id = ?", rid3)
    ]
    assert len(ids) == len(set(ids)) and len(ids) > finished[rid3]  # resumed, nothing twice

    for seq, job in after.items():  # every rating records its resolved settings
        config = json.loads(query(results, "SELECT config_json FROM ratings WHERE id = ?",
                                  job["rating_id"])[0]["config_json"])  # fmt: skip
        mix = json.loads(job["vars_json"])["mix"]
        store = json.loads(job["vars_json"])["store"]
        assert config["bg"]["workload"]["mix"] == mix
        assert config["bg"]["database"]["usercount"] == 400
        assert config["store"]["name"] == store
        assert config["sla"]["delta_search_s"] == 1.0  # from the template it extends
        recorded = json.loads(job["settings_json"])
        assert recorded["bg"]["workload"]["mix"] == mix and recorded["store"]["name"] == store
        document = results / campaign_id / f"job-{seq}.yaml"
        check = bgbench("check-config", str(document))
        assert check.returncode == 0, check.stderr  # reproducible alone with rate -c
        if store == "postgres":
            assert "dsn" in config["store"]["options"]  # the campaign's server, passed in
    row = query(results, "SELECT * FROM campaigns")[0]
    assert row["status"] == "done" and row["file_text"] == path.read_text()
    assert row["version"]

    # every server the campaign (and the killed coordinator) started is stopped
    assert pg_pids <= server_pids(results)
    wait_until(
        lambda: not any(running(p) for p in server_pids(results)), "servers to stop", timeout=60
    )


def test_a_failed_job_is_recorded_and_the_campaign_goes_on(tmp_path, stops_servers):
    path = tmp_path / "c.yaml"
    path.write_text(f"""
campaign: failing
templates:
  postgres:  # a server is started, but the job's own dsn (port 9: nothing) wins
    server: {{kind: postgres}}
    store: {{name: postgres, options: {{dsn: "host=127.0.0.1 port=9 user=postgres",
                                      connect_timeout_s: 2}}}}
  sqlite:
    store: {{name: sqlite, options: {{path: "{tmp_path}/bg.sqlite"}}}}
jobs:
  - extends: ${{store}}
    foreach: {{store: [postgres, sqlite]}}
    sla: {{delta_search_s: 1, delta_s: 1}}
    rating: {{objective: soar, max_threads: 2, final_runs: 1, repeats: 1}}
    agents: {{local: 1, processes: 1}}
    params: {{usercount: 200}}
""")  # fmt: skip
    assert not load_campaign(path).invalid, [j.error for j in load_campaign(path).invalid]
    proc = bgbench("campaign", "run", str(path), "--results", str(tmp_path / "r"), "--json")
    assert proc.returncode == 3, proc.stderr  # a job failed: a fault, the others recorded
    outcome = json.loads(proc.stdout)
    assert [j["status"] for j in outcome["jobs"]] == ["failed", "done"]
    assert outcome["jobs"][0]["message"], outcome
    assert outcome["jobs"][1]["soar"] > 0
    assert "1 of 2 jobs failed" in proc.stderr
    started = server_pids(tmp_path / "r")
    assert started and not any(running(p) for p in started)  # stopped after the campaign

    stop = bgbench("campaign", "run", str(path), "--results", str(tmp_path / "s"), "--json",
                   "--on-failure", "stop")  # fmt: skip
    assert stop.returncode == 3, stop.stderr
    stopped = json.loads(stop.stdout)
    assert [j["status"] for j in stopped["jobs"]] == ["failed", "pending"]
    assert stopped["status"] == "failed"
    started = server_pids(tmp_path / "s")
    assert started and not any(running(p) for p in started)  # a failed campaign's too


def test_an_interrupted_campaign_stops_its_servers_and_resumes(tmp_path, killer, stops_servers):
    path = small_campaign(tmp_path)
    text = (
        path.read_text()
        .replace("[sqlite, postgres]", "[postgres]")
        .replace("server: {kind: postgres}", "server: {kind: postgres, fresh: true}")
    )
    path.write_text(text)
    results = tmp_path / "results"
    coordinator = subprocess.Popen(
        [*BGBENCH, "campaign", "run", str(path), "--results", str(results)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    killer.append(coordinator.pid)

    def first_rating_started() -> bool:
        rows = query(results, "SELECT count(*) AS n FROM experiments")
        return bool(rows) and rows[0]["n"] >= 1

    wait_until(first_rating_started, "the first job's first experiment")
    pids = server_pids(results)
    assert pids and all(running(p) for p in pids)
    coordinator.send_signal(signal.SIGINT)  # Ctrl-C
    _, stderr = coordinator.communicate(timeout=120)
    assert coordinator.returncode == 130, stderr
    assert not any(running(p) for p in pids), stderr  # stopped before it exited
    row = query(results, "SELECT status FROM campaigns")[0]
    assert row["status"] == "interrupted"
    (campaign_id,) = [r["id"] for r in query(results, "SELECT id FROM campaigns")]
    proc = bgbench("campaign", "run", "--resume", campaign_id, "--results", str(results), "--json")
    assert proc.returncode == 0, proc.stderr
    assert [j["status"] for j in json.loads(proc.stdout)["jobs"]] == ["done", "done"]
    assert not any(running(p) for p in server_pids(results))
