"""An agent's samples of its host are untrusted like the rest of what it sends: the fake
agent of test_hardening_agents sends a progress whose host sample is out of bounds and the
real `bgbench run` ends in one line naming the agent and the field (exit 3); a monitor
that streams such samples is dropped with a note, and the experiment goes on."""

import math
import os
import subprocess
from collections.abc import Callable, Iterator
from concurrent import futures
from functools import partial

import grpc
import pytest

from bgbench.coordinator.execution.monitor_agents import MonitorAgents
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc
from bgbench.resources.processes import StoreWatch
from tests import helpers
from tests.e2e.test_hardening_agents import (
    FakeAgent,
    Script,
    handshake,
    progress,
    result,
    run_against,
)
from tests.helpers import BGBENCH

wait_until = partial(helpers.wait_until, timeout=60.0)


@pytest.fixture
def serve() -> Iterator[Callable[[pb_grpc.WorkerServicer], str]]:
    """Serves a fake agent on loopback; its address. The servers stop when the test ends."""
    servers: list[grpc.Server] = []

    def start(servicer: pb_grpc.WorkerServicer) -> str:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_WorkerServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return f"127.0.0.1:{port}"

    try:
        yield start
    finally:
        for server in servers:
            server.stop(grace=None)


def fake_agent(serve: Callable[[pb_grpc.WorkerServicer], str], script: Script) -> str:
    return serve(FakeAgent(script))


def host(**changes: object) -> pb.HostSample:
    sample = pb.HostSample(
        host_id="boot fake-host", host="fake-host", source="agent", elapsed_seconds=0.5,
        interval_seconds=0.5, cpu_per_core=[0.5, 0.5], memory_used_bytes=1 << 30,
        memory_total_bytes=8 << 30, load=pb.GroupSample(cpu_cores=0.5, processes=1),
    )  # fmt: skip
    for name, value in changes.items():
        if name in ("load", "store"):
            getattr(sample, name).CopyFrom(value)
        elif name == "cpu_per_core":
            del sample.cpu_per_core[:]
            sample.cpu_per_core.extend(value)  # type: ignore[arg-type]
        else:
            setattr(sample, name, value)
    return sample


def sampled(**changes: object) -> pb.RunEvent:
    event = progress()
    event.progress.host.CopyFrom(host(**changes))
    return event


CASES = {
    "a NaN core": (host(cpu_per_core=[math.nan]), "host sample cpu_per_core: nan"),
    "a core busy 50 times over": (host(cpu_per_core=[50.0]), "host sample cpu_per_core: 50.0"),
    "5000 cores": (host(cpu_per_core=[0.1] * 5000), "host sample cpu_per_core: 5000 cores"),
    "a host name of 100 kB": (host(host="h" * 100_000), "host sample host: 100000 characters"),
    "a store of negative cores": (
        host(store=pb.GroupSample(cpu_cores=-1.0, processes=3)),
        "host sample store cpu_cores: -1.0",
    ),
    "an infinite network": (
        host(net_rx_bytes_per_s=math.inf),
        "host sample net_rx_bytes_per_s: inf",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_host_sample_out_of_bounds_is_one_line_exit_3(serve, tmp_path, case):
    bad, named = CASES[case]
    event = progress()
    event.progress.host.CopyFrom(bad)
    address = fake_agent(serve, Script(events=[event, result()]))
    code, line, _ = run_against(address, tmp_path)
    assert code == 3, line
    assert f"agent {address} sent an invalid {named}" in line, line


def test_a_sane_host_sample_is_taken(serve, tmp_path):
    """The sample above passes the checks: the failures are the checks'."""
    address = fake_agent(serve, Script(events=[sampled(), result()]))
    proc = subprocess.run(
        [*BGBENCH, "run", "--store", "sqlite", "--threads", "1", "--duration", "1",
         "--users", "100", "--results", str(tmp_path / "res"), "--json",
         "-p", f'agents.addresses=["{address}"]',
         "-p", "rating.steady_state=false"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "BGBENCH_TOKEN": "a-token-the-fake-ignores"},
    )  # fmt: skip
    assert "Traceback" not in proc.stderr and "sent an invalid" not in proc.stderr
    assert '"actions": 10' in proc.stdout, proc.stderr


class FakeMonitor(FakeAgent):
    """A monitor-only agent whose Watch sends a good sample, then a bad one."""

    def __init__(self) -> None:
        super().__init__(Script(hello=handshake(load_processes=0, monitor_only=True)))

    def Watch(self, request, context) -> Iterator[pb.HostSample]:
        yield host(source="monitor")
        yield host(source="monitor", cpu_per_core=[math.nan])


def test_a_monitor_sending_samples_out_of_bounds_is_a_note(serve):
    fake_monitor = serve(FakeMonitor())
    monitors = MonitorAgents([fake_monitor], None, StoreWatch(), heartbeat_timeout=30)
    try:
        monitors.start(60.0)
        notes = wait_until(monitors.notes, "a note of the monitor's bad sample")
        series, final = monitors.stop()
    finally:
        monitors.close()
    assert notes == final and len(final) == 1
    assert f"monitor {fake_monitor}" in final[0] and "cpu_per_core: nan" in final[0]
    assert len(series[f"monitor {fake_monitor}"]) == 1, "the good sample before it is kept"
