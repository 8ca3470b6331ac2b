"""Agents measure their host while they work: every progress of a run carries a sample of
the host, with the load processes and the store's processes on it; a monitor-only agent
(`bgbench agent --monitor-only`) runs no load and streams its host's samples through the
Watch RPC, and one that dies or freezes mid-watch becomes a note, never a hang."""

import os
import signal
import subprocess
import sys
import threading
import time
from functools import partial

import grpc
import pytest

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.agents import AgentClient, Credentials, spawn_local_agents
from bgbench.coordinator.execution.experiment import Cluster, run_experiment
from bgbench.coordinator.execution.monitor_agents import JOIN_S, MonitorAgents
from bgbench.errors import SystemFault, UserError
from bgbench.protos import AGENT_READY_LINE
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc
from bgbench.resources.processes import StoreWatch
from bgbench.worker.service import MAX_WATCHES
from tests import helpers
from tests.conftest import fresh_database

AGENT = [sys.executable, "-m", "bgbench", "agent"]
TOKEN = "a-monitor-token-for-the-tests"
HEARTBEAT_S = 3.0
wait_until = partial(helpers.wait_until, timeout=120.0)


@pytest.fixture
def start_agent(tmp_path):
    """`bgbench agent ARGS` on loopback, its address once it serves; every one started is
    killed (after a SIGCONT, in case the test stopped it) when the test ends."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> tuple[str, subprocess.Popen[str]]:
        proc = subprocess.Popen(
            [*AGENT, "--work-dir", str(tmp_path / f"agent{len(started)}"), *args],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "BGBENCH_TOKEN": TOKEN},
        )  # fmt: skip
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(AGENT_READY_LINE), f"agent did not start: {line!r}"
        return line[len(AGENT_READY_LINE) :].strip(), proc

    try:
        yield start
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
            proc.wait(10)


def run_and_watch(addresses: list[str], overrides: list[str], threads: int) -> list[pb.Progress]:
    """One real experiment of a few seconds; every progress the agents sent."""
    settings = load_settings(None, [parse_override(o) for o in overrides])
    cluster = Cluster.connect(addresses, None)
    progresses: list[pb.Progress] = []
    try:
        cluster.prepare(settings)
        result = run_experiment(
            cluster, settings, threads, 4.0, "sampled", lambda i, p: progresses.append(p)
        )
    finally:
        cluster.close()
    assert not result.fault, result.fault
    return progresses


def sampled(progresses: list[pb.Progress]) -> list[pb.HostSample]:
    """The host samples of a run's progress; every progress but a run's final one has one."""
    assert len(progresses) >= 3, "a 4 s run gives a progress every 0.5 s"
    assert all(p.HasField("host") for p in progresses[:-1]), "a progress without its sample"
    return [p.host for p in progresses if p.HasField("host")]


def test_every_progress_of_a_sqlite_run_samples_the_host_and_the_load(tmp_path):
    agents = spawn_local_agents(1, 2, tmp_path, timeout=60)
    try:
        progresses = run_and_watch(
            agents.addresses,
            ["store.name=sqlite", f"store.options.path={tmp_path / 'db.sqlite'}", "usercount=200"],
            threads=4,
        )
    finally:
        agents.close()
    samples = sampled(progresses)
    for host in samples:
        assert host.source == "agent" and host.host_id and host.memory_total_bytes > 0
        assert len(host.cpu_per_core) == os.cpu_count()
        assert host.load.processes >= 1 and host.load.cores_allowed >= 1
        assert not host.HasField("store"), "SQLite runs inside the load processes: no server"
    assert sum(h.load.cpu_cores for h in samples) > 0, "the load processes used no CPU"
    elapsed = [h.elapsed_seconds for h in samples]
    assert elapsed == sorted(elapsed) and all(h.interval_seconds > 0 for h in samples)


def test_the_store_processes_of_a_postgres_run_are_found_by_its_port(tmp_path, postgres_server):
    agents = spawn_local_agents(1, 1, tmp_path, timeout=60)
    try:
        progresses = run_and_watch(
            agents.addresses,
            [
                "store.name=postgres",
                f"store.options.dsn={fresh_database(postgres_server)}",
                "usercount=200",
            ],
            threads=4,
        )
    finally:
        agents.close()
    stores = [h.store for h in sampled(progresses) if h.HasField("store")]
    assert stores, "PostgreSQL's processes were never found"
    port = str(postgres_server["port"])
    assert all(port in s.found_by for s in stores), {s.found_by for s in stores}
    # the postmaster and the backends of the run's connections
    assert max(s.processes for s in stores) >= 2
    assert sum(s.cpu_cores for s in stores) > 0, "PostgreSQL served the run with no CPU"


def test_a_monitor_only_agent_refuses_load_and_says_so(start_agent):
    address, _ = start_agent("--monitor-only")
    creds = Credentials(token=TOKEN)
    with pytest.raises(UserError, match=r"monitor-only.*resources\.monitors"):
        AgentClient(address, creds).handshake()
    client = AgentClient(address, creds)
    facts = client.handshake(monitor=True)
    assert facts.monitor_only and facts.load_processes == 0
    with pytest.raises(UserError, match="monitor-only"):
        client.prepare(pb.PrepareRequest(workload="bg", store="sqlite", fragments=[0]))
    with pytest.raises(UserError, match="monitor-only"):
        list(client.run(pb.RunRequest(experiment_id="x", threads=1, duration_seconds=1)))
    client.close()


def test_the_agent_help_documents_monitor_only():
    wide = {**os.environ, "COLUMNS": "400"}  # each option's help on one line
    shown = helpers.bgbench("agent", "--help", timeout=60, env=wide)
    assert shown.returncode == 0
    option = [x for x in shown.stdout.splitlines() if "--monitor-only " in x and "<bool>" in x]
    assert option and "run no load" in option[0] and "resources.monitors" in option[0]


def test_a_monitor_streams_its_host_with_the_store_processes(start_agent, postgres_server):
    address, _ = start_agent("--monitor-only")
    postmaster = postgres_server["pid"]
    monitors = MonitorAgents(
        [address], Credentials(token=TOKEN), StoreWatch(pids=(postmaster,)), HEARTBEAT_S
    )
    try:
        monitors.start(60.0)
        wait_until(lambda: monitors.received().get(f"monitor {address}", 0) >= 3, "3 samples")
        series, notes = monitors.stop()
    finally:
        monitors.close()
    assert notes == []
    samples = series[f"monitor {address}"]
    assert len(samples) >= 3
    for host in samples:
        assert host.source == "monitor" and host.cores == os.cpu_count()
        assert host.load is None, "a monitor runs no load"
        # the postmaster and its background processes (checkpointer, writer, ...)
        assert host.store is not None and host.store.processes >= 2
        assert host.store.found_by == f"pid {postmaster}"
        assert host.store.rss_bytes > 0


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "frozen"])
def test_a_monitor_lost_mid_watch_is_a_note_not_a_hang(start_agent, how):
    address, proc = start_agent("--monitor-only")
    monitors = MonitorAgents([address], Credentials(token=TOKEN), StoreWatch(), HEARTBEAT_S)
    try:
        monitors.start(60.0)
        wait_until(lambda: monitors.received().get(f"monitor {address}", 0) >= 2, "2 samples")
        lost = time.monotonic()
        proc.send_signal(how)
        wait_until(monitors.notes, "a note of the lost monitor", timeout=HEARTBEAT_S + 30)
        noticed = time.monotonic() - lost
        began = time.monotonic()
        series, notes = monitors.stop()
        assert time.monotonic() - began < JOIN_S + 5, "stop() waited on the lost monitor"
    finally:
        monitors.close()
    assert len(notes) == 1 and address in notes[0], notes
    if how == signal.SIGSTOP:
        assert "silent" in notes[0]
    # the heartbeat timeout, plus what a busy machine adds to seeing it
    assert noticed < HEARTBEAT_S + 10
    assert len(series[f"monitor {address}"]) >= 2, "the samples before the loss are kept"


def test_a_monitor_refusing_the_token_is_the_users_to_fix(start_agent):
    address, _ = start_agent("--monitor-only")
    with pytest.raises(UserError, match=r"agents\.token"):
        MonitorAgents([address], Credentials(token="wrong"), StoreWatch(), HEARTBEAT_S)


def test_an_unreachable_monitor_is_named_at_construction(tmp_path):
    with pytest.raises(SystemFault, match=r"127\.0\.0\.1:9"):
        MonitorAgents(["127.0.0.1:9"], None, StoreWatch(), HEARTBEAT_S)


def watch_request(**fields) -> pb.WatchRequest:
    return pb.WatchRequest(**{"experiment_id": "w", "duration_seconds": 5.0, **fields})


@pytest.mark.parametrize(
    "request_, named",
    [
        (watch_request(duration_seconds=0), "duration_seconds"),
        (watch_request(duration_seconds=float("nan")), "duration_seconds"),
        (watch_request(duration_seconds=1e9), "duration_seconds"),
        (watch_request(experiment_id="../x"), "experiment_id"),
        (watch_request(watch=pb.StoreWatch(pids=[0])), "pids"),
        (watch_request(watch=pb.StoreWatch(pids=list(range(1, 5000)))), "pids"),
        (watch_request(watch=pb.StoreWatch(names=["x" * 300])), "names"),
        (watch_request(watch=pb.StoreWatch(container="a/../b")), "container"),
    ],
    ids=["zero", "nan", "too-long", "id", "pid-0", "pids", "name", "container"],
)
def test_a_bad_watch_request_is_one_line_naming_the_field(start_agent, request_, named):
    address, _ = start_agent("--monitor-only")
    client = AgentClient(address, Credentials(token=TOKEN))
    with pytest.raises(UserError) as info:
        list(client.watch(request_))
    message = str(info.value)
    assert named in message and "\n" not in message
    client.close()


def test_watch_needs_the_token_and_ends_with_its_duration(start_agent):
    address, _ = start_agent("--monitor-only")
    channel = grpc.insecure_channel(address)
    stub = pb_grpc.WorkerStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        list(stub.Watch(watch_request(), timeout=30))
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()
    client = AgentClient(address, Credentials(token=TOKEN))
    began = time.monotonic()
    samples = list(client.watch(watch_request(duration_seconds=1.0)))  # ends on its own
    assert 1 <= len(samples) <= (time.monotonic() - began) / 0.5 + 2
    client.close()


def test_a_caller_that_leaves_frees_its_watch(start_agent):
    """Watches the callers left end on the agent: never more than MAX_WATCHES at once,
    and a new one is served once the others are gone."""
    address, _ = start_agent("--monitor-only")
    client = AgentClient(address, Credentials(token=TOKEN))
    streams = [client.watch(watch_request(duration_seconds=600)) for _ in range(MAX_WATCHES)]
    for stream in streams:
        next(stream)  # each is being served
    with pytest.raises(SystemFault, match="watches already"):
        next(client.watch(watch_request()))
    for stream in streams:
        stream.close()  # the caller leaves: the call is cancelled

    def served() -> bool:
        try:
            return next(client.watch(watch_request())) is not None
        except SystemFault:
            return False

    assert wait_until(served, "a watch served after the others left", timeout=60)
    client.close()


def test_a_run_is_watched_by_a_monitor_beside_it(tmp_path, start_agent):
    """A monitor watching the host while a real run goes on: both streams sample the same
    host (one host id), the monitor without load, the agent with it."""
    address, _ = start_agent("--monitor-only")
    monitors = MonitorAgents([address], Credentials(token=TOKEN), StoreWatch(), HEARTBEAT_S)
    agents = spawn_local_agents(1, 1, tmp_path, timeout=60)
    box: dict[str, list[pb.Progress]] = {}
    try:
        monitors.start(30.0)
        runner = threading.Thread(
            target=lambda: box.setdefault(
                "p",
                run_and_watch(
                    agents.addresses,
                    ["store.name=sqlite", f"store.options.path={tmp_path / 'db.sqlite'}"],
                    threads=2,
                ),
            )
        )
        runner.start()
        runner.join(300)
        series, notes = monitors.stop()
    finally:
        agents.close()
        monitors.close()
    assert notes == []
    watched = series[f"monitor {address}"]
    run_hosts = {h.host_id for h in sampled(box["p"])}
    assert watched and {h.host_id for h in watched} == run_hosts
