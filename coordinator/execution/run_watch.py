"""Watching an experiment while it runs. Two ways an agent fails without its stream
breaking: it goes silent (a frozen host, a cut network: no progress for the heartbeat
timeout), or it still answers but one of its load processes stopped (frozen, stopped,
starved): the agent's Status shows that process's beats quiet, asked about every second
(faults.Liveness), and the fault names the load process, not the agent."""

import threading
import time
from collections.abc import Callable

from bgbench.coordinator.execution.agents import AgentClient
from bgbench.coordinator.records.faults import Liveness, silent_agent
from bgbench.errors import BGBenchError

JOIN_EVERY_S = 0.25

Fail = Callable[[str], None]  # ends the experiment everywhere with this fault


def watch_run(
    clients: list[AgentClient],
    drivers: list[threading.Thread],
    last_seen: list[float],
    timeout: float,
    fail: Fail,
) -> None:
    """Until every driver (one per agent, reading its run stream) has ended: fail the
    experiment once an agent's stream is silent for `timeout` (`last_seen`: monotonic
    time of its last event), or its Status shows a load process without beats as long."""
    done = threading.Event()
    pollers = [
        threading.Thread(target=_poll_status, args=(c, done, timeout, fail), daemon=True)
        for c in clients
    ]
    for p in pollers:
        p.start()
    failed = False
    try:
        while any(d.is_alive() for d in drivers):
            for d in drivers:
                d.join(timeout=JOIN_EVERY_S)
            now = time.monotonic()
            for i, client in enumerate(clients):
                silent = now - last_seen[i]
                if drivers[i].is_alive() and silent > timeout and not failed:
                    failed = True
                    fail(silent_agent(client.address, silent, timeout, "running"))
    finally:
        done.set()


def _poll_status(client: AgentClient, done: threading.Event, timeout: float, fail: Fail) -> None:
    watch = Liveness(client.address, "running", timeout, time.monotonic())
    while not done.wait(watch.wait(time.monotonic())):
        try:
            problem = client.judge(watch)
        except BGBenchError as exc:  # a Status out of bounds (agent_checks)
            problem = str(exc)
        if problem is not None and not done.is_set():
            fail(problem)
            return
