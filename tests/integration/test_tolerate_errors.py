"""A run that tolerates errors (RunRequest.tolerate_errors: a scenario's faults) goes on
through a store that fails, to its duration, its errors and timeouts counted, where the
same run without it ends as "store failing"; calls stuck at its end are a note, not an
abort. And an agent's validation cut into phases adds up to the whole run's. Real servers,
each test's own when it breaks it."""

import contextlib
import os
import signal
import sqlite3
import threading
from pathlib import Path

import psutil
import pytest

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.agents import AgentClient, spawn_local_agents
from bgbench.coordinator.execution.experiment import Cluster
from bgbench.errors import UserError
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result import RunResult
from bgbench.worker import runner as runner_module
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.worker.plan import ERROR_BACKOFF_S
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import FragmentPlan
from bgbench.workloads.bg.workload import WORKLOAD
from tests.conftest import fresh_database, servers

PLAN = FragmentPlan((1.0,), 0.27)
CONFIG = BGConfig.model_validate({"database": {"usercount": 200}, "workload": {"mix": "low"}})
TASKS = 4
DURATION_S = 8.0


def run_with_fault(
    engine: FragmentEngine, tmp: Path, fault, tolerate: bool, duration_s: float = DURATION_S
) -> tuple[RunResult, list[int]]:
    """Run for `duration_s`; once 300 actions are done, `fault()` in a thread of its own (the
    publishing loop must not wait on it). The run's summary, and the timeouts it last
    published."""
    reached = threading.Event()
    published = [0]

    def publish(actions: int, errors: int, *rest: object) -> None:
        published[0] = int(rest[-1])
        if actions >= 300 and not reached.is_set():
            reached.set()
            threading.Thread(target=fault, daemon=True).start()

    spec = RunSpec("fault", TASKS, duration_s, 0, 7, tmp / "fault", tolerate_errors=tolerate)
    summary = engine.run(spec, threading.Event(), publish)
    assert reached.is_set(), "the run never reached 300 actions before its fault"
    return summary, published


def postgres_engine(directory: Path) -> tuple[dict, FragmentEngine]:
    server = servers.start("postgres", directory)
    options = {"dsn": servers.new_database(server)}
    engine = FragmentEngine(WORKLOAD, CONFIG, "postgres", options, PLAN.capacities, 0)
    engine.prepare()
    return server, engine


@pytest.mark.timeout(240)
@pytest.mark.parametrize("tolerate", [True, False], ids=["tolerant", "intolerant"])
def test_postgresql_shut_down_mid_run_is_tolerated_only_when_asked(tmp_path, tolerate):
    """Tasks on an event loop (asyncpg): the server is shut down at once (SIGQUIT to the
    postmaster ends every backend) once the run is under way."""
    server, engine = postgres_engine(tmp_path / "pg")
    try:
        summary, _ = run_with_fault(
            engine, tmp_path, lambda: os.kill(server["pid"], signal.SIGQUIT), tolerate
        )
    finally:
        engine.close()
        servers.stop(tmp_path / "pg")
    assert summary.actions >= 300 and summary.errors > 0
    if not tolerate:
        assert summary.aborted.startswith("store failing: 100 errors in a row"), summary.aborted
        assert summary.elapsed < DURATION_S
        return
    assert summary.aborted == "" and summary.note == ""
    assert summary.elapsed >= DURATION_S  # ended by the clock, not by the failures
    # Far more errors than the 100 in a row that end an intolerant run, yet no spinning on
    # the dead store: each task waited ERROR_BACKOFF_S after each of its failures.
    assert summary.errors > 100
    assert summary.errors <= TASKS * (summary.elapsed / ERROR_BACKOFF_S + 1)
    assert summary.timeouts == 0  # refused connections, not timeouts
    assert sum(e.count for e in summary.error_counts) == summary.errors


@pytest.mark.timeout(240)
@pytest.mark.parametrize("tolerate", [True, False], ids=["tolerant", "intolerant"])
def test_a_locked_sqlite_is_tolerated_by_threads_only_when_asked(tmp_path, tolerate):
    """Threads (a blocking store): another client takes the database for itself once the
    run is under way; every call then fails after the 20 ms busy timeout."""
    path = tmp_path / "db.sqlite"
    options = {"path": str(path), "busy_timeout_ms": 20}
    engine = FragmentEngine(WORKLOAD, CONFIG, "sqlite", options, PLAN.capacities, 0)
    engine.prepare()
    holder = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
    holder.execute("PRAGMA journal_mode=DELETE")  # in WAL mode readers would go on
    try:
        summary, _ = run_with_fault(
            engine, tmp_path, lambda: holder.execute("BEGIN EXCLUSIVE"), tolerate
        )
    finally:
        if holder.in_transaction:
            holder.rollback()
        holder.close()
        engine.close()
    assert summary.concurrency == "threads"
    assert summary.errors > 0
    if not tolerate:
        assert summary.aborted.startswith("store failing: 100 errors in a row"), summary.aborted
        assert summary.elapsed < DURATION_S
        return
    assert summary.aborted == "" and summary.note == ""
    assert summary.elapsed >= DURATION_S
    assert summary.errors > 100
    assert any(e.type == "OperationalError" for e in summary.error_counts)


@pytest.mark.timeout(240)
def test_calls_stuck_at_the_end_of_a_tolerant_run_are_a_note_not_an_abort(tmp_path, monkeypatch):
    """PostgreSQL frozen (SIGSTOP) mid-run: every task waits inside a call past the end."""
    monkeypatch.setattr(runner_module, "STOP_GRACE_S", 1.0)
    server, engine = postgres_engine(tmp_path / "pg")
    pid = server["pid"]
    backends = []

    def freeze() -> None:
        backends.extend(c.pid for c in psutil.Process(pid).children())
        for p in [pid, *backends]:
            os.kill(p, signal.SIGSTOP)

    try:
        summary, _ = run_with_fault(engine, tmp_path, freeze, True, 4.0)
    finally:
        for p in [pid, *backends]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGCONT)
        engine.close()
        servers.stop(tmp_path / "pg")
    assert summary.aborted == ""
    assert summary.note.endswith(
        "tasks still inside store calls 1 s after the end: the store stopped answering"
    ), summary.note
    assert summary.state_uncertain  # the stuck writes' outcomes are unknown


@pytest.mark.timeout(240)
def test_timeouts_are_counted_apart_from_other_errors(tmp_path, postgres_server):
    """CASQL's cache frozen mid-run: its calls time out (timeout_s), counted as timeouts in
    the progress and the run's result; the tolerant run goes on to its end."""
    mc = servers.start("memcached", tmp_path / "mc")
    frozen = threading.Event()

    def freeze() -> None:
        os.kill(mc["pid"], signal.SIGSTOP)
        frozen.set()

    try:
        options = {
            "dsn": fresh_database(postgres_server),
            "memcached": f"127.0.0.1:{mc['port']}",
            "timeout_s": 0.2,
        }
        engine = FragmentEngine(WORKLOAD, CONFIG, "casql", options, PLAN.capacities, 0)
        engine.prepare()
        try:
            summary, published = run_with_fault(engine, tmp_path, freeze, True, 5.0)
        finally:
            if frozen.is_set():
                os.kill(mc["pid"], signal.SIGCONT)
            engine.close()
    finally:
        servers.stop(tmp_path / "mc")
    assert summary.aborted == "" and summary.elapsed >= 5.0
    assert 0 < summary.timeouts <= summary.errors
    assert published[0] == summary.timeouts  # what the progress stream said last
    timed_out = sum(e.count for e in summary.error_counts if "Timeout" in e.type)
    assert timed_out == summary.timeouts


@pytest.fixture
def agent(tmp_path):
    agents = spawn_local_agents(1, 2, tmp_path, timeout=60)
    try:
        yield agents
    finally:
        agents.close()


@pytest.mark.timeout(240)
def test_an_agents_validation_in_phases_adds_up_to_the_whole_run(agent, tmp_path):
    settings = load_settings(
        None,
        [
            parse_override("store.name=sqlite"),
            parse_override(f"store.options.path={tmp_path / 'db.sqlite'}"),
            parse_override("usercount=400"),
        ],
    )
    cluster = Cluster.connect(agent.addresses, None)
    try:
        cluster.prepare(settings)
        client: AgentClient = cluster.clients[0]
        request = pb.RunRequest(
            experiment_id="phased", threads=4, duration_seconds=3.0, seed=1, tolerate_errors=True
        )
        events = list(client.run(request))
        progress = [e.progress for e in events if e.HasField("progress")]
        result = next(e.result for e in events if e.HasField("result"))
        assert result.aborted == "" and result.actions > 0
        assert progress and all(p.timeouts == 0 for p in progress)
        reply = client.validate("phased", phase_starts_s=[1.0, 2.0], series_bin_s=0.5)
        assert reply.reads > 0
        assert len(reply.phases) == 3
        assert sum(p.reads for p in reply.phases) == reply.reads
        assert sum(p.unpredictable for p in reply.phases) == reply.unpredictable_reads
        assert all(p.reads > 0 for p in reply.phases)  # each second of the run read
        assert sum(reply.series_reads) == reply.reads
        assert len(reply.series_unpredictable) == len(reply.series_reads)
        # the bins run from the run's start, the origin of the progress's elapsed_seconds
        last = max(p.elapsed_seconds for p in progress)
        assert 4 <= len(reply.series_reads) <= last / 0.5 + 1
        whole = client.validate("phased")
        assert whole.reads == reply.reads and not whole.phases and not whole.series_reads
        with pytest.raises(UserError, match=r"phase_starts_s\[1\]: 1 s comes before"):
            client.validate("phased", phase_starts_s=[2.0, 1.0])
        with pytest.raises(UserError, match="no run of experiment 'other'"):
            client.validate("other", phase_starts_s=[1.0])
    finally:
        cluster.close()
