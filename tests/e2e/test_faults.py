"""Faults mid-experiment: a killed agent, a frozen one (silent, connection open), and a
rating that retries on the agents that answer."""

import os
import signal
import threading
import time

from rich.console import Console

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.experiment import run_experiment
from bgbench.coordinator.execution.session import bring_up
from bgbench.coordinator.records.faults import STATUS_EVERY_S


def settings(tmp_path, *extra: str):
    pairs = [
        "store.name=sqlite", f"store.options.path={tmp_path / 'db.sqlite'}", "usercount=400",
        f"results_dir={tmp_path}", *extra,
    ]  # fmt: skip
    return load_settings(None, [parse_override(p) for p in pairs])


def run_with_fault(target, s, act, duration=30.0, heartbeat_timeout=None):
    """Run an experiment; after the first progress from every agent, call act(); return the
    result and how long the coordinator took to end the experiment after act()."""
    timeout = heartbeat_timeout or s.agents.heartbeat_timeout
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
            heartbeat_timeout=timeout,
        )  # fmt: skip

    runner = threading.Thread(target=experiment)
    runner.start()
    assert ready.wait(30), "no progress from the agents"
    acted = time.monotonic()
    act()
    runner.join(duration)
    assert not runner.is_alive(), "the coordinator hung on a failed agent"
    return out["result"], time.monotonic() - acted


def kill_once_running(root, experiment_id: str, logs: int, kill) -> threading.Thread:
    """Kill once every agent's load is under way (its log of the experiment exists): a
    condition, not a delay, so a busy machine cannot make the kill come before the run."""

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(list(root.rglob(f"{experiment_id}/log-f*.bglog"))) >= logs:
                kill()
                return
            time.sleep(0.02)

    killer = threading.Thread(target=watch, daemon=True)
    killer.start()
    return killer


def test_a_killed_agent_is_detected_at_once(tmp_path):
    s = settings(tmp_path)
    with bring_up(s, tmp_path / "w", Console(stderr=True).print) as target:
        victim = target.local.processes[1]
        result, detected = run_with_fault(target, s, victim.kill)
    assert result.fault and target.local.addresses[1] in result.fault
    assert not result.passed
    assert detected < 5.0  # the connection breaks: no need to wait for the heartbeat


def test_a_frozen_agent_is_caught_by_the_heartbeat(tmp_path):
    # Loading keeps the default timeout (a 2 s one also judges the load's progress, which
    # two CPU hogs beside it can stall that long); the run's stream is judged at 2 s.
    s = settings(tmp_path)
    with bring_up(s, tmp_path / "w", Console(stderr=True).print) as target:
        frozen = target.local.processes[0]
        try:
            result, detected = run_with_fault(
                target, s, lambda: os.kill(frozen.pid, signal.SIGSTOP), heartbeat_timeout=2.0
            )
        finally:
            os.kill(frozen.pid, signal.SIGCONT)
    assert "silent" in result.fault and "heartbeat timeout 2 s" in result.fault
    # silent for the timeout since its last answer: a Status answered up to a second (the
    # Status interval) before the freeze counts from then
    assert 2.0 - STATUS_EVERY_S - 0.1 < detected < 6.0


def test_retry_respawns_a_dead_agent_and_repeats_the_experiment(tmp_path):
    s = settings(tmp_path, "agents.on_failure=retry")
    with bring_up(s, tmp_path / "w", Console(stderr=True).print) as target:
        recorded = []
        target.record_fault = recorded.append
        old = target.local.addresses[1]
        exp_id = f"retry-{time.time()}"
        killer = kill_once_running(tmp_path / "w", exp_id, 2, target.local.processes[1].kill)
        result = target.run(4, 3.0, exp_id)
        killer.join()
        assert len(recorded) == 1 and old in recorded[0].fault  # the failure, as it was
        assert not result.fault, result.fault  # the retry ran on a fresh agent
        assert result.actions > 0 and len(result.agents) == 2
        assert target.local.addresses[1] != old


def _listed_agent(tmp_path, port: int):
    import subprocess
    import sys

    from bgbench.protos import AGENT_READY_LINE

    proc = subprocess.Popen(
        [sys.executable, "-m", "bgbench", "agent", "--listen", f"127.0.0.1:{port}",
         "--work-dir", str(tmp_path / f"agent-{port}"), "--allow-store-paths"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "BGBENCH_TOKEN": "tok"},  # not in argv, which ps shows
    )  # fmt: skip
    ready = proc.stdout.readline()
    if not ready.startswith(AGENT_READY_LINE):
        proc.kill()
        proc.wait(10)
        raise AssertionError(f"agent on port {port} did not start: {ready!r}")
    return proc


def _free_ports(n: int) -> list[int]:
    import socket

    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_listed_agents_retry_without_the_dead_one_then_it_rejoins(tmp_path):
    import json

    ports = _free_ports(2)
    agents: list = []
    addresses = [f"127.0.0.1:{p}" for p in ports]
    s = settings(
        tmp_path, "agents.on_failure=retry", "agents.token=tok",
        f"agents.addresses={json.dumps(addresses)}",
    )  # fmt: skip
    try:
        for p in ports:
            agents.append(_listed_agent(tmp_path, p))
        with bring_up(s, tmp_path / "w", Console(stderr=True).print) as target:
            exp_id = f"listed-{time.time()}"
            killer = kill_once_running(tmp_path, exp_id, 2, agents[1].kill)
            result = target.run(4, 3.0, exp_id)
            killer.join()
            assert not result.fault
            assert [a.address for a in result.agents] == addresses[:1]  # went on without it
            agents[1] = _listed_agent(tmp_path, ports[1])  # systemd brought it back
            result = target.run(4, 1.0, f"rejoined-{time.time()}")
            assert [a.address for a in result.agents] == addresses  # it rejoined
            assert not result.fault and all(a.actions > 0 for a in result.agents)
    finally:
        for a in agents:
            a.kill()
            a.wait(10)


def test_an_unreachable_agent_is_named_in_one_line(tmp_path):
    import subprocess
    import sys

    port = _free_ports(1)[0]
    proc = subprocess.run(
        [sys.executable, "-m", "bgbench", "run", "--results", str(tmp_path),
         "-p", f'agents.addresses=["127.0.0.1:{port}"]', "-p", "agents.token=x"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 3
    errors = [line for line in proc.stderr.splitlines() if line.startswith("bgbench:")]
    assert len(errors) == 1, proc.stderr  # one line, after the progress line
    assert f"127.0.0.1:{port}" in errors[0] and "did not answer" in errors[0]
    assert "Traceback" not in proc.stderr
