"""Threads that outlive the stop grace: a store that stopped answering (threads waiting inside
its calls) is told apart from a client that cannot even schedule its threads (T beyond what
one load process runs), and the run's `aborted` reason says which."""

import sqlite3
import threading
import time

import pytest

from bgbench.sdk import blocking, run_blocking
from bgbench.validation.logformat import LogWriter
from bgbench.worker import runner as runner_module
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.worker.measurement import Recorder
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.bg.store import AsyncBGConnection
from bgbench.workloads.bg.timed import TimedConnection
from bgbench.workloads.bg.workload import WORKLOAD
from bgbench.workloads.registry import make_binding

PLAN = FragmentPlan((1.0,), 0.27)


def config(users: int, mix) -> BGConfig:
    return BGConfig.model_validate(
        {
            "database": {"usercount": users, "friendcountperuser": 4, "resourcecountperuser": 2},
            "workload": {"mix": mix},
        }
    )


@pytest.mark.slow
def test_threads_the_client_cannot_schedule_are_a_client_fault(tmp_path, monkeypatch):
    # The null store never blocks; with thousands of threads and a grace too short for them
    # all to get the interpreter once, they are still alive at the deadline, outside calls.
    monkeypatch.setattr(runner_module, "STOP_GRACE_S", 0.05)
    engine = FragmentEngine(
        WORKLOAD, config(2000, {"VP": 1}), "null", {"concurrency": "threads"}, PLAN.capacities, 0
    )
    engine.prepare()
    stop = threading.Event()
    try:
        summary = engine.run(RunSpec("many", 1500, 0.2, 0, 1, tmp_path / "many"), stop, _ignore)
    finally:
        stop.set()
        for th in threading.enumerate():
            if th.name.startswith("socialite-f0-t"):
                th.join(60)
    assert summary.aborted.startswith("client overloaded: "), summary.aborted
    assert "of 1500 threads could not stop" in summary.aborted
    assert "use more load processes or agents" in summary.aborted
    assert "store stopped answering" not in summary.aborted


@pytest.mark.slow
def test_threads_waiting_inside_store_calls_mean_the_store_stopped_answering(tmp_path, monkeypatch):
    monkeypatch.setattr(runner_module, "STOP_GRACE_S", 1.0)
    path = tmp_path / "db.sqlite"
    options = {"path": str(path), "busy_timeout_ms": 60_000}
    engine = FragmentEngine(WORKLOAD, config(200, "low"), "sqlite", options, PLAN.capacities, 0)
    engine.prepare()
    holder = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
    holder.execute("PRAGMA journal_mode=DELETE")  # in WAL mode readers would go on
    stop = threading.Event()

    def hold(*_args) -> None:
        """Once the run is under way, another client takes the database for itself: every
        read and write now waits on it."""
        if not holder.in_transaction:
            holder.execute("BEGIN EXCLUSIVE")

    try:
        summary = engine.run(RunSpec("held", 4, 0.5, 0, 1, tmp_path / "held"), stop, hold)
    finally:
        stop.set()
        holder.rollback()
        holder.close()
    assert summary.aborted == (
        "4 threads still inside store calls 1 s after the end: the store stopped answering"
    )


def test_a_recorder_says_when_its_thread_is_inside_a_store_call(tmp_path):
    fragment = Fragment(config(50, "low").database, PLAN, 0)
    binding = make_binding("bg", "null", {})
    binding.load_fragment(fragment)
    recorder = Recorder(LogWriter(tmp_path / "log.bglog"), threading.Lock())
    seen: list[int] = []
    conn = binding.connect()
    real = conn.view_profile

    def watched(requester: int, member: int):
        seen.append(timed.in_call)  # what the engine reads while the call is in progress
        return real(requester, member)

    conn.view_profile = watched
    timed = TimedConnection(blocking(conn, AsyncBGConnection), recorder, 0)
    member = int(fragment.members[0])
    before = time.monotonic_ns()
    assert run_blocking(timed.view_profile(member, member, 0, 0)) is not None
    assert seen and seen[0] >= before  # inside the call: when it began
    assert timed.in_call == 0  # after it: none


def _ignore(*_args) -> None:
    pass
