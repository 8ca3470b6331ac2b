"""A scenario's partitions (real nftables rules on loopback) and its timeline (steps at
their offsets, recorded, and undone in a finally)."""

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bgbench.coordinator.records.events import JsonLinesSink, ScenarioStep
from bgbench.coordinator.scenario.network import (
    Endpoint,
    NetworkFaultError,
    NetworkFaults,
    NetworkNode,
    bgbench_tables,
    check_address,
    nft,
    partition_rules,
    sweep_dead_tables,
)
from bgbench.coordinator.scenario.nodes import CommandSpec, command_node, run_command
from bgbench.coordinator.scenario.run import is_warmup
from bgbench.coordinator.scenario.timeline import ScenarioTimeline, step_line
from bgbench.run_result.scenario import StepRecord
from tests.helpers import wait_until

pytestmark = pytest.mark.skipif(
    subprocess.run(["sh", "-c", "command -v nft"], capture_output=True).returncode != 0,
    reason="nftables is not installed (scripts/test installs it)",
)


@dataclass(frozen=True)
class Step:
    at_s: float
    do: str
    node: str | None = None
    from_: str = "others"
    command: str | None = None
    timeout_s: float = 30.0
    label: str = ""


@pytest.fixture
def listener() -> Iterator[tuple[str, int]]:
    """A TCP listener on 127.0.0.1 that accepts (and closes) every connection."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()
    stop.set()
    thread.join(timeout=5)
    server.close()


@pytest.fixture
def faults() -> Iterator[NetworkFaults]:
    made = NetworkFaults()
    yield made
    made.close()
    assert made.table not in bgbench_tables()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process standing in for a node a user controls by commands."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield proc
    proc.kill()
    proc.wait(timeout=10)


def connects(address: tuple[str, int], timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection(address, timeout=timeout):
            return True
    except OSError:
        return False


def state_of(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("State:"):
            return line.split()[1]
    return "?"


def test_a_partition_from_clients_blocks_a_connection_and_heal_restores_it(
    listener: tuple[str, int], faults: NetworkFaults
) -> None:
    host, port = listener
    node = NetworkNode("web", "", (Endpoint(host, port),), ())
    assert connects(listener)
    line = faults.partition(node, [], "clients")
    assert faults.table in line and faults.table in bgbench_tables()
    assert not connects(listener, timeout=1.0)  # dropped: the connection hangs, then fails
    assert faults.heal("web") == "healed web from clients"
    assert connects(listener)
    assert faults.close() == f"deleted table inet {faults.table}"
    assert faults.table not in bgbench_tables()


def test_a_partition_from_others_cuts_only_the_peer_endpoints(
    listener: tuple[str, int], faults: NetworkFaults
) -> None:
    host, port = listener
    client = socket.socket()
    client.bind(("127.0.0.1", 0))
    client_port = client.getsockname()[1]
    client.close()
    node = NetworkNode("n1", "", (Endpoint(host, client_port),), (Endpoint(host, port),))
    faults.partition(node, [], "others")
    assert not connects(listener)
    faults.heal(None)
    assert connects(listener)
    listed = nft(f"list table inet {faults.table}\n")
    assert "drop" not in listed  # healed: the table is there, empty


def test_rules_cut_a_node_address_from_its_peers_both_ways() -> None:
    n1 = NetworkNode("n1", "127.0.0.2", (), (Endpoint("127.0.0.2", 7000),))
    n2 = NetworkNode("n2", "127.0.0.3", (), (Endpoint("127.0.0.3", 7000),))
    rules = partition_rules(n1, [n2], "others")
    assert "ip saddr 127.0.0.2 ip daddr 127.0.0.3 tcp dport 7000 drop" in rules
    assert "ip saddr 127.0.0.3 tcp sport 7000 ip daddr 127.0.0.2 drop" in rules
    assert "ip daddr 127.0.0.2 tcp dport 7000 drop" in rules
    assert partition_rules(n1, [n2], "clients") == []


def test_addresses_outside_loopback_and_the_namespaces_are_refused() -> None:
    assert check_address("198.19.0.5", "x") == "198.19.0.5"
    for bad in ("10.0.0.1", "8.8.8.8", "::1", "localhost", "127.0.0.1; drop"):
        with pytest.raises(NetworkFaultError):
            check_address(bad, "node x")
    outside = NetworkNode("x", "", (Endpoint("192.168.1.5", 80),), ())
    with pytest.raises(NetworkFaultError, match=r"outside 127\.0\.0\.0/8"):
        NetworkFaults().partition(outside, [], "clients")


def test_a_dead_process_table_is_swept() -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    name = f"bgbench_{int(dead.stdout)}_0"
    nft(f"table inet {name} {{}}\n")
    try:
        assert name in bgbench_tables()
        assert name in sweep_dead_tables()
        assert name not in bgbench_tables()
    finally:
        if name in bgbench_tables():
            nft(f"delete table inet {name}\n")


def test_a_command_is_killed_at_its_timeout_and_its_output_bounded() -> None:
    slow = run_command(f"{sys.executable} -c 'import time; time.sleep(60)'", 0.5)
    assert slow.timed_out and slow.exit_status is None
    loud = run_command(f"{sys.executable} -c 'print(\"x\" * 100000)'", 30)
    assert loud.exit_status == 0 and len(loud.output) == 16 * 1024
    missing = run_command("/nonexistent/command", 5)
    assert missing.exit_status is None and "cannot run" in missing.output


def test_steps_run_in_order_recorded_and_undone_after_an_exception(
    listener: tuple[str, int], sleeper: subprocess.Popen[bytes]
) -> None:
    port = listener[1]
    pid = sleeper.pid
    web = command_node(
        "web",
        CommandSpec(
            {"pause": f"kill -STOP {pid}", "resume": f"kill -CONT {pid}"},
            client_ports=(port,),
        ),
    )
    steps = [
        Step(0.0, "partition", "web", from_="clients"),
        Step(0.0, "pause", "web"),
        Step(0.1, "run", command="echo password=hunter2 done"),
        Step(0.2, "run", command="false"),
        Step(3600.0, "heal", label="never reached"),
    ]
    lines: list[str] = []
    started: list[int] = []
    timeline = ScenarioTimeline(steps, {"web": web}, lines.append, lambda i, _: started.append(i))
    table = timeline.network.table
    with pytest.raises(RuntimeError, match="the experiment failed"):
        try:
            timeline.start()
            wait_until(lambda: timeline.records[3].ended_s is not None, "four steps", 60)
            assert table in bgbench_tables()
            assert state_of(pid) == "T"
            assert not connects(listener)
            raise RuntimeError("the experiment failed")
        finally:
            records = timeline.finish()
    assert table not in bgbench_tables()
    assert state_of(pid) != "T"
    assert connects(listener)
    assert started == [0, 1, 2, 3]
    partition, pause, echo, false, never = records
    assert partition.ok and pause.ok and echo.ok and not false.ok
    assert echo.exit_status == 0 and "hunter2" not in echo.output and "done" in echo.output
    assert false.exit_status == 1 and false.detail == "exit status 1"
    assert not never.reached and never.text == "never reached"
    assert partition.started_s is not None and pause.started_s is not None
    assert partition.started_s <= pause.started_s  # in order, each when the previous ended
    assert any(line.startswith("0.") and "pause web" in line for line in lines)
    assert f"undo: deleted table inet {table}" in lines and "undo: resume web" in lines
    assert step_line(false).endswith("FAILED: exit status 1")
    assert timeline.undo_failures == []
    assert timeline.finish() is records  # twice is once


def test_a_ratings_warm_up_runs_without_the_scenario() -> None:
    assert is_warmup("R20260101-120000-abcd-warmup0-T8")
    assert is_warmup("R20260101-120000-abcd-warmup1-T8-retry1")
    assert not is_warmup("R20260101-120000-abcd-T8-5s")
    assert not is_warmup("20260101-120000-T4")


def test_a_step_is_an_event_the_events_file_records(tmp_path: Path) -> None:
    record = StepRecord(index=0, at_s=20.0, action="kill", node="n2", started_s=20.1,
                        ended_s=20.4, ok=True, detail="killed n2 (pid 1234)")  # fmt: skip
    event = ScenarioStep.of("exp-1", record, step_line(record))
    assert event.line == "20.1 s: kill n2 — killed n2 (pid 1234)"
    sink = JsonLinesSink(tmp_path / "events.jsonl")
    sink.emit(event)
    sink.close()
    [written] = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert written["kind"] == "scenario_step" and written["node"] == "n2" and written["ok"]
