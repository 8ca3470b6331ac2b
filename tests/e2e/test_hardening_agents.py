"""What an agent sends is untrusted: a fake agent (a real gRPC server in this process,
serving the generated Worker servicer) answers the real `bgbench run` with a wrong
protocol version, an impossible count, a non-finite progress, a fragment it was not
given, inconsistent validation counts or an inflating histogram. Each ends the run in
one line naming the agent and the field (exit 2 for a version mismatch, the user's to
fix; exit 3 otherwise: a broken agent is infrastructure), promptly and without the
coordinator's memory growing with what the agent claims."""

import base64
import math
import os
import struct
import subprocess
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field

import grpc
import pytest

from bgbench.protos import PROTOCOL_VERSION
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc
from tests.helpers import BGBENCH, run_with_peak_rss

PROMPT_S = 120.0  # the run must end well within this, however much the agent claims
SANE_RSS_KIB = 1 << 20  # 1 GiB: a coordinator that believed 4e9 load processes is far past it


def handshake(**changes: object) -> pb.HandshakeReply:
    reply = pb.HandshakeReply(
        protocol_version=PROTOCOL_VERSION, agent_id="fake", hostname="fake-host", cores=2,
        memory_bytes=8 << 30, load_processes=1, bgbench_version="0", python_version="3",
    )  # fmt: skip
    for name, value in changes.items():
        setattr(reply, name, value)
    return reply


def progress(**changes: object) -> pb.RunEvent:
    p = pb.Progress(elapsed_seconds=0.5, actions=10, cpu_percent=50.0)
    for name, value in changes.items():
        setattr(p, name, value)
    return pb.RunEvent(progress=p)


def result() -> pb.RunEvent:
    return pb.RunEvent(
        result=pb.RunResult(
            elapsed_seconds=1.0, actions=10, load_processes=1, threads=1, concurrency="asyncio"
        )
    )


def loaded(request: pb.PrepareRequest) -> pb.PrepareReply:
    if request.phase == pb.PREPARE_SCHEMA:
        return pb.PrepareReply(store_description="fake store")
    return pb.PrepareReply(
        fragments=[pb.FragmentInfo(fragment=k, members=100) for k in request.fragments],
        store_description="fake store",
    )


@dataclass
class Script:
    """What the fake agent answers."""

    hello: pb.HandshakeReply = field(default_factory=handshake)
    prepare: Callable[[pb.PrepareRequest], pb.PrepareReply] = loaded
    events: list[pb.RunEvent] = field(default_factory=lambda: [progress(), result()])
    validation: pb.ValidateReply = field(default_factory=lambda: pb.ValidateReply(reads=1))


class FakeAgent(pb_grpc.WorkerServicer):
    def __init__(self, script: Script) -> None:
        self.script = script

    def Handshake(self, request, context):
        return self.script.hello

    def Status(self, request, context):
        return pb.StatusReply(agent_id="fake")

    def Prepare(self, request, context):
        return self.script.prepare(request)

    def Run(self, request, context) -> Iterator[pb.RunEvent]:
        yield from self.script.events

    def Validate(self, request, context):
        return self.script.validation

    def Shutdown(self, request, context):
        return pb.ShutdownReply()


@pytest.fixture
def fake_agent():
    """Serves a Script on loopback; its address. The servers stop when the test ends."""
    servers: list[grpc.Server] = []

    def serve(script: Script) -> str:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_WorkerServicer_to_server(FakeAgent(script), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return f"127.0.0.1:{port}"

    try:
        yield serve
    finally:
        for server in servers:
            server.stop(grace=None)


def run_against(address: str, tmp_path) -> tuple[int, str, float]:
    """`bgbench run` against the listed agent: (exit code, its one `bgbench:` line,
    seconds it took). Its peak memory is checked on the way."""
    started = time.monotonic()
    proc, peak_rss_kib = run_with_peak_rss(
        [*BGBENCH, "run", "--store", "sqlite", "--threads", "1", "--duration", "1",
         "--users", "100", "--results", str(tmp_path / "res"),
         "-p", f'agents.addresses=["{address}"]', "-p", "agents.heartbeat_timeout=30",
         "-p", "rating.steady_state=false"],
        PROMPT_S, env={**os.environ, "BGBENCH_TOKEN": "a-token-the-fake-ignores"},
    )  # fmt: skip
    took = time.monotonic() - started
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bgbench:")]
    assert len(lines) == 1, proc.stderr
    assert peak_rss_kib < SANE_RSS_KIB  # the run's own, and its children's
    return proc.returncode, lines[0], took


def test_the_fake_agent_as_it_should_answer_gives_a_result(fake_agent, tmp_path):
    """The fake's sane answers pass the checks: the failures below are the checks'."""
    proc = subprocess.run(
        [*BGBENCH, "run", "--store", "sqlite", "--threads", "1", "--duration", "1",
         "--users", "100", "--results", str(tmp_path / "res"), "--json",
         "-p", f'agents.addresses=["{fake_agent(Script())}"]',
         "-p", "rating.steady_state=false"],
        capture_output=True, text=True, timeout=PROMPT_S,
        env={**os.environ, "BGBENCH_TOKEN": "a-token-the-fake-ignores"},
    )  # fmt: skip
    assert "Traceback" not in proc.stderr
    assert "sent an invalid" not in proc.stderr and "protocol version" not in proc.stderr
    assert '"actions": 10' in proc.stdout, proc.stderr


def test_another_protocol_version_is_one_line_exit_2(fake_agent, tmp_path):
    address = fake_agent(Script(hello=handshake(protocol_version=PROTOCOL_VERSION + 1)))
    code, line, _ = run_against(address, tmp_path)
    assert code == 2, line
    assert f"agent {address} speaks protocol version {PROTOCOL_VERSION + 1}" in line
    assert f"this coordinator {PROTOCOL_VERSION}" in line


def hist_claiming(lowest: int, highest: int, digits: int) -> bytes:
    """An HDR histogram blob whose header claims another range (hdrh would allocate the
    counters it implies)."""
    header = struct.pack(">IIIIqqd", 0x1C849313, 0, 0, digits, lowest, highest, 1.0)
    payload = zlib.compress(header)
    return base64.b64encode(struct.pack(">II", 0x1C849314, len(payload)) + payload)


def zip_bomb() -> bytes:
    payload = zlib.compress(bytes(64 << 20), 9)  # 64 MiB of zeros in about 64 KiB
    return base64.b64encode(struct.pack(">II", 0x1C849314, len(payload)) + payload)


def far_fragment(request: pb.PrepareRequest) -> pb.PrepareReply:
    reply = loaded(request)
    for f in reply.fragments:
        f.fragment = 99
    return reply


CASES = {
    "no load processes": (Script(hello=handshake(load_processes=0)), "load_processes: 0"),
    "4e9 load processes": (
        Script(hello=handshake(load_processes=4_000_000_000)),
        "load_processes: 4000000000",
    ),
    "no cores": (Script(hello=handshake(cores=0)), "cores: 0"),
    "no memory": (Script(hello=handshake(memory_bytes=0)), "memory_bytes: 0"),
    "a fragment it was not given": (Script(prepare=far_fragment), "fragment id: 99"),
    "negative progress": (
        Script(events=[progress(cpu_percent=-5.0), result()]),
        "progress cpu_percent: -5.0",
    ),
    "NaN progress": (
        Script(events=[progress(elapsed_seconds=math.nan), result()]),
        "progress elapsed_seconds: nan",
    ),
    "a histogram of another range": (
        Script(events=[progress(response_hist_delta=hist_claiming(1, 1 << 62, 5)), result()]),
        "progress response_hist_delta: a histogram of 1..4611686018427387904 us",
    ),
    "a histogram that inflates without bound": (
        Script(events=[progress(response_hist_delta=zip_bomb()), result()]),
        "progress response_hist_delta: a histogram that inflates beyond",
    ),
    "a result of another process count": (
        Script(events=[progress(), pb.RunEvent(result=pb.RunResult(load_processes=7))]),
        "run load_processes: 7, where its handshake said 1",
    ),
    "more unpredictable reads than reads": (
        Script(validation=pb.ValidateReply(reads=3, unpredictable_reads=5)),
        "validation unpredictable_reads: 5, not 0 to 3",
    ),
    "examples nested too deep": (
        Script(validation=pb.ValidateReply(reads=1, examples_json="[" * 100_000)),
        "validation examples_json: not JSON",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_what_an_agent_sends_out_of_bounds_is_one_line_exit_3(fake_agent, tmp_path, case):
    script, named = CASES[case]
    address = fake_agent(script)
    code, line, took = run_against(address, tmp_path)
    assert code == 3, line
    assert f"agent {address} sent an invalid {named}" in line, line
    print(f"\n{case}: ended in {took:.1f} s")
