"""Faults mid-experiment: a killed agent, a frozen one (silent, connection open), and a
rating that retries on the agents that answer."""

import os
import signal
import threading
import time

from rich.console import Console

from bgbench.coordinator.config import load_settings, parse_override
from bgbench.coordinator.experiment import run_experiment
from bgbench.coordinator.session import bring_up


def settings(tmp_path, *extra: str):
    pairs = [
        "store.name=sqlite", f"store.options.path={tmp_path / 'db.sqlite'}", "usercount=400",
        f"results_dir={tmp_path}", *extra,
    ]  # fmt: skip
    return load_settings(None, [parse_override(p) for p in pairs])


def run_with_fault(target, s, act, duration=30.0):
    """Run an experiment; after the first progress from every agent, call act(); return the
    result and how long the coordinator took to end the experiment after act()."""
    seen: set[int] = set()
    ready = threading.Event()

    def progress(i, _p):
        seen.add(i)
        if len(seen) == len(target.cluster.clients):
            ready.set()

    out: dict = {}

    def experiment():
        out["result"] = run_experiment(
            target.cluster, s, 4, duration, f"fault-{time.time()}", progress,
            heartbeat_timeout=s.agents.heartbeat_timeout,
        )  # fmt: skip

    runner = threading.Thread(target=experiment)
    runner.start()
    assert ready.wait(30), "no progress from the agents"
    acted = time.monotonic()
    act()
    runner.join(duration)
    assert not runner.is_alive(), "the coordinator hung on a failed agent"
    return out["result"], time.monotonic() - acted


def test_a_killed_agent_is_detected_at_once(tmp_path):
    s = settings(tmp_path)
    with bring_up(s, tmp_path / "w", Console(stderr=True)) as target:
        victim = target.local.processes[1]
        result, detected = run_with_fault(target, s, victim.kill)
    assert result.fault and target.local.addresses[1] in result.fault
    assert not result.passed
    assert detected < 5.0  # the connection breaks: no need to wait for the heartbeat


def test_a_frozen_agent_is_caught_by_the_heartbeat(tmp_path):
    s = settings(tmp_path, "agents.heartbeat_timeout=2")
    with bring_up(s, tmp_path / "w", Console(stderr=True)) as target:
        frozen = target.local.processes[0]
        try:
            result, detected = run_with_fault(
                target, s, lambda: os.kill(frozen.pid, signal.SIGSTOP)
            )
        finally:
            os.kill(frozen.pid, signal.SIGCONT)
    assert "silent" in result.fault and "heartbeat timeout 2 s" in result.fault
    assert 1.5 < detected < 6.0


def test_retry_respawns_a_dead_agent_and_repeats_the_experiment(tmp_path):
    s = settings(tmp_path, "agents.on_failure=retry")
    with bring_up(s, tmp_path / "w", Console(stderr=True)) as target:
        recorded = []
        target.record_fault = recorded.append
        old = target.local.addresses[1]
        killer = threading.Timer(1.5, target.local.processes[1].kill)
        killer.start()
        result = target.run(4, 3.0, f"retry-{time.time()}")
        killer.join()
        assert len(recorded) == 1 and old in recorded[0].fault  # the failure, as it was
        assert not result.fault, result.fault  # the retry ran on a fresh agent
        assert result.actions > 0 and len(result.agents) == 2
        assert target.local.addresses[1] != old
