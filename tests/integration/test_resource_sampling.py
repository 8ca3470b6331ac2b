"""Sampling real processes and real servers: CPU-burning children, a child pinned to one
core, PostgreSQL's processes found from a client's connection (and confined to one core),
and a real node_exporter on loopback. The machine is shared and busy: the assertions are
bounds that hold under load (a burner's demand, its CPU plus its run-queue wait, is about
one core whether it gets the core or waits for it)."""

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from bgbench.launchers.procs import free_port
from bgbench.resources.host import HostSampler
from bgbench.resources.node_exporter import NodeExporter, ScrapeError
from bgbench.resources.processes import ProcessGroup, StoreWatch
from bgbench.worker.host_watch import HostWatch
from tests.helpers import wait_until

BURN = "while True: pass"
HOLD = (
    "import psycopg, sys\n"
    "conn = psycopg.connect(sys.argv[1])\n"
    "conn.execute('select 1')\n"
    "print('connected', flush=True)\n"
    "sys.stdin.read()\n"
)


@pytest.fixture
def children():
    """Start python children; every one is killed at the end."""
    started: list[subprocess.Popen[str]] = []

    def start(code: str, *args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait(10)


@pytest.fixture
def cgroup():
    """A cgroup of its own (cgroup v1's cpu controller, and cgroup v2's unified tree when
    mounted beside it), as a container runtime makes one: (name, [directories]). The
    processes put in it are killed and the cgroups removed at the end."""
    name = "bgbench-test-" + uuid.uuid4().hex[:10]
    base = Path("/sys/fs/cgroup")
    roots = [base / "cpu"] if (base / "cpu/cgroup.procs").exists() else []
    if (base / "unified/cgroup.procs").exists():
        roots.append(base / "unified")
    elif (base / "cgroup.controllers").exists():  # cgroup v2 alone
        roots.append(base)
    made = []
    for root in roots:
        with contextlib.suppress(OSError):
            (root / name).mkdir()
            made.append(root / name)
    if not made:
        pytest.skip("no cgroup can be made here (not root, or cgroupfs read-only)")
    yield name, made
    for directory in made:
        for pid in (directory / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    for directory in made:
        procs = directory / "cgroup.procs"
        wait_until(lambda p=procs: not p.read_text().split(), "the cgroup's end", 30)
        directory.rmdir()


def _sampled_until(group: ProcessGroup, holds, what: str):
    """Sample the group (a tick each poll) until a sample satisfies `holds`; that sample."""
    return wait_until(
        lambda: (s := group.sample()) is not None and holds(s) and s, what, 60, poll_s=0.3
    )


def test_a_burning_child_shows_its_cpu_and_demand(children):
    burner = children(BURN)
    group = ProcessGroup.of_pids(lambda: [burner.pid])
    first = group.sample()
    assert first is not None and first.processes == 1 and first.cpu_cores == 0.0  # primes
    # its memory is read on membership refreshes (every few seconds)
    sample = _sampled_until(
        group, lambda s: s.cpu_cores > 0 and s.rss_bytes > 1_000_000, "the burner's CPU and RSS"
    )
    assert sample.processes == 1
    assert sample.cores_allowed == len(os.sched_getaffinity(burner.pid))
    # its demand is one core, got or waited for (one thread): about 1, give or take the
    # sampler's own delays on a busy machine, never the 2 of two cores
    demand = _sampled_until(group, lambda s: s.demand_cores >= 0.5, "the burner's demand")
    assert demand.busiest_cores < 1.9
    assert demand.demand_cores == pytest.approx(demand.busiest_cores)


def test_a_child_pinned_to_one_core_is_allowed_one(children):
    pinned = children(BURN)
    os.sched_setaffinity(pinned.pid, {0})
    group = ProcessGroup.of_pids(lambda: [pinned.pid])
    sample = group.sample()
    assert sample is not None and sample.cores_allowed == 1.0
    free = children(BURN)
    both = ProcessGroup.of_pids(lambda: [pinned.pid, free.pid]).sample()
    assert both is not None and both.cores_allowed == len(os.sched_getaffinity(0))


def test_processes_that_vanish_are_dropped(children):
    gone, stays = children(BURN), children(BURN)
    group = ProcessGroup.of_pids(lambda: [gone.pid, stays.pid])
    assert group.sample().processes == 2
    gone.kill()
    gone.wait(10)
    assert group.sample().processes == 1
    stays.kill()
    stays.wait(10)
    assert group.sample() is None
    assert ProcessGroup.of_pids(lambda: []).sample() is None


def _holding(children, server) -> subprocess.Popen[str]:
    dsn = f"host=127.0.0.1 port={server['port']} user=postgres dbname=postgres"
    client = children(HOLD, dsn)
    assert client.stdout.readline().strip() == "connected"
    return client


def test_postgres_processes_are_found_from_a_clients_connection(children, postgres_server):
    client = _holding(children, postgres_server)
    group = ProcessGroup.store(StoreWatch(), lambda: [client.pid])
    sample = group.sample()
    assert sample is not None
    assert sample.found_by == f"port {postgres_server['port']}"
    assert postgres_server["pid"] in group.pids and client.pid not in group.pids
    assert sample.processes >= 3  # the postmaster, its background workers, our backend
    backends = [psutil.Process(p) for p in group.pids]
    assert {p.name() for p in backends} == {"postgres"}
    assert any(p.ppid() == postgres_server["pid"] for p in backends)
    assert sample.rss_bytes > 0 and sample.cores_allowed >= 1


def test_a_backend_forked_as_a_run_starts_joins_the_store_at_the_next_tick(
    children, postgres_server
):
    first = _holding(children, postgres_server)
    watch = HostWatch(StoreWatch(), load=lambda: [first.pid])
    try:
        watch.prime()
        assert watch.store is not None and watch.store.pids
        before = set(watch.store.pids)
        _holding(children, postgres_server)  # another connection: PostgreSQL forks for it
        forked = {p.pid for p in psutil.Process(postgres_server["pid"]).children()} - before
        assert forked
        watch.sample(0.5)  # early in the run: membership looked at again next tick
        watch.sample(1.0)  # well before the group's own refresh (every REFRESH_S)
        assert forked <= set(watch.store.pids)
    finally:
        watch.close()


def test_postgres_working_for_a_client_shows_its_cpu(children, postgres_server):
    dsn = f"host=127.0.0.1 port={postgres_server['port']} user=postgres dbname=postgres"
    busy = children(
        "import psycopg, sys\n"
        "conn = psycopg.connect(sys.argv[1], autocommit=True)\n"
        "print('connected', flush=True)\n"
        "for _ in range(100_000):\n"  # bounded: the finalizer kills it sooner
        "    conn.execute('select count(*) from generate_series(1, 200000)').fetchone()\n",
        dsn,
    )
    assert busy.stdout.readline().strip() == "connected"
    group = ProcessGroup.store(StoreWatch(), lambda: [busy.pid])
    assert group.sample() is not None  # primes
    # the backend computing for it: the store's CPU, and its busiest process's demand
    sample = _sampled_until(
        group, lambda s: s.cpu_cores > 0.05 and s.busiest_cores > 0.05, "the server's CPU"
    )
    assert sample.demand_cores >= sample.busiest_cores > 0
    assert sample.cpu_cores <= sample.processes  # no process is more than a core


def test_postgres_found_by_pid_and_name_says_so(children, postgres_server):
    client = _holding(children, postgres_server)
    watch = StoreWatch(pids=(postgres_server["pid"],), names=("postgres",), discover=False)
    group = ProcessGroup.store(watch, lambda: [client.pid])
    sample = group.sample()
    assert sample is not None
    assert sample.found_by == f"pid {postgres_server['pid']}, name postgres"
    assert postgres_server["pid"] in group.pids
    nothing = ProcessGroup.store(StoreWatch(discover=False), lambda: [client.pid])
    assert nothing.sample() is None


def test_a_client_with_no_server_finds_no_store(children):
    lonely = children(BURN)
    assert ProcessGroup.store(StoreWatch(), lambda: [lonely.pid]).sample() is None


def test_postgres_confined_to_one_core_is_allowed_one(children, postgres_one_core):
    client = _holding(children, postgres_one_core)
    group = ProcessGroup.store(StoreWatch(), lambda: [client.pid])
    sample = group.sample()
    assert sample is not None and sample.found_by == f"port {postgres_one_core['port']}"
    assert sample.cores_allowed == 1.0
    assert all(os.sched_getaffinity(p) == {0} for p in group.pids if psutil.pid_exists(p))


def test_the_host_sampler_gives_every_core_memory_disk_and_network(children):
    sampler = HostSampler()
    burner = children(BURN)
    load = ProcessGroup.of_pids(lambda: [burner.pid])
    load.sample()
    sample = wait_until(
        lambda: (s := sampler.sample(1.0, load.sample())) and s.cpu_cores > 0.3 and s,
        "the host's CPU busy",
        60,
        poll_s=0.3,
    )
    assert sample.cores == psutil.cpu_count() and sample.host_id.endswith(sample.host)
    assert all(0.0 <= c <= 1.0 for c in sample.cpu_per_core)
    assert 0 < sample.memory_used_bytes < sample.memory_total_bytes
    assert sample.memory_total_bytes == psutil.virtual_memory().total
    assert sample.interval_s > 0 and sample.source == "agent" and sample.elapsed_s == 1.0
    assert sample.disk_read_bytes_per_s >= 0 and sample.disk_write_bytes_per_s >= 0
    assert 0.0 <= sample.disk_busy <= 1.0
    assert sample.net_rx_bytes_per_s >= 0 and sample.net_capacity_bytes_per_s >= 0
    assert sample.load is not None and sample.store is None
    assert HostSampler().host_id == sampler.host_id  # one host, whoever samples it


def test_node_exporter_gives_cpu_per_core_memory_and_disk(node_exporter_server):
    watch = NodeExporter(node_exporter_server["endpoint"], timeout_s=5)
    assert watch.name == f"node_exporter {node_exporter_server['endpoint']}"
    first = watch.sample(0.0)
    assert first.interval_s == 0.0 and first.disk_read_bytes_per_s == 0.0  # primes
    sample = wait_until(
        lambda: (s := watch.sample(0.5)).interval_s > 0.2 and s, "a second scrape", 60, poll_s=0.3
    )
    assert sample.source == "node_exporter" and sample.host_id == watch.name
    assert sample.cores == psutil.cpu_count()
    assert all(0.0 <= c <= 1.0 for c in sample.cpu_per_core)
    assert sample.memory_total_bytes == pytest.approx(psutil.virtual_memory().total, rel=0.01)
    assert 0 < sample.memory_used_bytes < sample.memory_total_bytes
    assert sample.busiest_disk in {d for d in psutil.disk_io_counters(perdisk=True)}
    assert 0.0 <= sample.disk_busy <= 1.0 and sample.disk_write_bytes_per_s >= 0
    assert sample.load is None and sample.store is None


def test_an_unreachable_node_exporter_is_a_scrape_error_within_its_timeout():
    watch = NodeExporter(f"127.0.0.1:{free_port()}", timeout_s=1)
    with pytest.raises(ScrapeError, match=r"127\.0\.0\.1"):
        watch.sample(0.0)


def test_a_cgroup_cpu_quota_caps_the_cores_allowed(children, cgroup):
    _, directories = cgroup
    if (directories[0] / "cpu.cfs_quota_us").exists():  # cgroup v1
        (directories[0] / "cpu.cfs_quota_us").write_text("30000\n")  # 0.3 core of 100 ms
    elif (directories[0] / "cpu.max").exists():  # cgroup v2 with its cpu controller on
        (directories[0] / "cpu.max").write_text("30000 100000\n")
    else:
        pytest.skip("no cgroup cpu controller to set a quota with here")
    burner = children(BURN)
    for directory in directories:
        (directory / "cgroup.procs").write_text(str(burner.pid))
    group = ProcessGroup.of_pids(lambda: [burner.pid])
    assert group.sample().cores_allowed == pytest.approx(0.3)
    # Throttled, it waits for the quota as in a run queue: its demand is still ~1 core.
    # Over one short interval the quota's 100 ms periods (and the kernel's lagging
    # counters) can show more: the figures are taken over eight intervals, about 2.4 s.
    seen: list = []

    def eight() -> bool:
        sample = group.sample()
        if sample is not None:
            seen.append(sample)
        return len(seen) >= 8

    wait_until(eight, "eight samples of the throttled burner", 60, poll_s=0.3)
    cpu = sum(s.cpu_cores for s in seen) / len(seen)
    demand = sum(s.demand_cores for s in seen) / len(seen)
    assert cpu < 0.6  # 0.3 of a core, give or take a period at each end
    assert demand / seen[-1].cores_allowed > 1.0  # saturated, and it shows


def test_a_containers_processes_are_found_by_its_cgroup(children, cgroup):
    name, directories = cgroup
    inside, outside = children(BURN), children(BURN)
    for directory in directories:
        (directory / "cgroup.procs").write_text(str(inside.pid))
    group = ProcessGroup.store(StoreWatch(container=name, discover=False), lambda: [])
    sample = group.sample()
    assert sample is not None and sample.found_by == f"container {name}"
    assert group.pids == [inside.pid] and outside.pid not in group.pids


def test_a_process_with_threads_is_sampled_per_thread(children):
    threaded = children(
        "import threading, sys\n"
        "def burn():\n"
        "    while True: pass\n"
        "for _ in range(3): threading.Thread(target=burn, daemon=True).start()\n"
        "print('started', flush=True)\n"
        "sys.stdin.read()\n"
    )
    assert threaded.stdout.readline().strip() == "started"
    group = ProcessGroup.of_pids(lambda: [threaded.pid])
    group.sample()
    # one interpreter: its threads take turns on the GIL, so about one core between them
    sample = _sampled_until(group, lambda s: s.cpu_cores > 0.1, "the threads' CPU")
    assert sample.processes == 1 and sample.busiest_cores <= 4.5
