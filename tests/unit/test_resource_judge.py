"""Host samples summarised over a window, and the bottleneck named from the figures."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgbench.resources.bottleneck import Thresholds, name_bottleneck
from bgbench.resources.model import GroupSample, HostFigures, HostSample
from bgbench.resources.summary import summarise

HOST = "boot-1 db1"


def sample(elapsed, cpu=(0.5, 0.5), load=None, store=None, host_id=HOST, **kw):
    return HostSample(
        host_id=host_id,
        host=host_id.split()[-1],
        source=kw.pop("source", "agent"),
        elapsed_s=elapsed,
        interval_s=kw.pop("interval_s", 0.5),
        cpu_per_core=list(cpu),
        load=load,
        store=store,
        **kw,
    )


# -- summarise ---------------------------------------------------------------------------


def test_window_means_and_memory_peak():
    series = {
        "agent a": [
            sample(0.5, cpu=(1.0, 1.0), memory_used_bytes=900),  # warm-up: cut
            sample(1.0, cpu=(0.2, 0.4), memory_used_bytes=100, memory_total_bytes=1000),
            sample(1.5, cpu=(0.4, 0.6), memory_used_bytes=300, memory_total_bytes=1000),
            sample(9.0, cpu=(1.0, 1.0)),  # after the end: cut
        ]
    }
    [h] = summarise(series, (1.0, 2.0))
    assert h.samples == 2
    assert h.cpu_per_core == pytest.approx([0.3, 0.5])
    assert h.cpu_cores == pytest.approx(0.8)
    assert h.memory_used_bytes == 300 and h.memory_total_bytes == 1000
    assert h.cores == 2 and h.host == "db1"


def test_agents_on_one_host_add_their_load_and_share_the_store():
    pg = GroupSample(cpu_cores=0.8, cores_allowed=2, processes=20, found_by="port 5432")
    a = [
        sample(
            t,
            load=GroupSample(cpu_cores=0.6, cores_allowed=2, busiest_cores=0.3, processes=2),
            store=pg,
        )
        for t in (1, 1.5, 2)
    ]
    b = [
        sample(
            t,
            load=GroupSample(cpu_cores=0.5, cores_allowed=2, busiest_cores=0.4, processes=2),
            store=pg,
        )
        for t in (1, 1.5)
    ]
    [h] = summarise({"agent a": a, "agent b": b}, (0, 10))
    assert h.load_cpu_cores == pytest.approx(1.1)  # both agents' load processes
    assert h.load_processes == 4
    assert h.load_cores_allowed == 2  # capped at the host's cores, not 4
    assert h.load_busiest_cores == pytest.approx(0.4)
    assert h.store_cpu_cores == pytest.approx(0.8)  # once, not twice
    assert h.store_processes == 20 and h.store_found_by == "port 5432"
    assert h.samples == 3  # the host's figures from the longer stream


def test_hosts_apart_and_priming_samples_left_out():
    series = {
        "agent a": [sample(0.0, cpu=(1.0,), interval_s=0.0), sample(1.0, cpu=(0.25,))],
        "node_exporter db:9100": [
            sample(
                1.0,
                cpu=(0.9, 0.9, 0.9, 0.9),
                host_id="node_exporter db:9100",
                source="node_exporter",
                disk_busy=0.5,
                busiest_disk="sda",
            ),
        ],
    }
    hosts = {h.host_id: h for h in summarise(series, (0.5, 5))}
    assert hosts[HOST].cpu_cores == pytest.approx(0.25)  # the priming sample says nothing
    remote = hosts["node_exporter db:9100"]
    assert remote.cores == 4 and remote.busiest_disk == "sda" and remote.watches_store


def test_hostile_figures_count_as_nothing():
    bad = sample(
        1.0,
        cpu=(math.nan, 7.0, -1.0),
        memory_used_bytes=-5,
        disk_busy=math.inf,
        net_rx_bytes_per_s=math.nan,
    )
    [h] = summarise({"agent a": [bad]}, (0, 2))
    assert h.cpu_per_core == [0.0, 1.0, 0.0]
    assert h.memory_used_bytes == 0 and h.disk_busy == 0.0 and h.net_rx_bytes_per_s == 0.0


def test_a_stream_with_nothing_in_the_window_keeps_its_samples():
    [h] = summarise({"agent a": [sample(0.5), sample(1.0)]}, (3.0, 4.0))
    assert h.samples == 2


def test_no_samples_no_hosts():
    assert summarise({}, (0, 1)) == []
    assert summarise({"agent a": []}, (0, 1)) == []


# -- name_bottleneck ---------------------------------------------------------------------


def figures(**kw):
    base = dict(host_id=HOST, host="db1", source="agent", samples=10, cores=2)
    return HostFigures(**{**base, **kw})


def test_server_cpu_names_its_processes_and_confinement():
    h = figures(
        cpu_cores=1.5,
        store_cpu_cores=0.9,
        store_runqueue_cores=0.08,
        store_cores_allowed=1,
        store_processes=23,
        store_found_by="port 5432",
        load_cpu_cores=0.5,
        load_cores_allowed=2,
        load_processes=2,
    )
    b = name_bottleneck([h], Thresholds(), embedded_store=False)
    assert b.kind == "server_cpu" and not b.client_bound
    assert b.used == pytest.approx(0.98) and b.capacity == 1
    assert "server CPU 0.98 of 1 core" in b.text
    assert "23 processes, port 5432" in b.text and "confined to 1 of the host's 2 cores" in b.text


def test_client_by_the_busiest_load_process():
    h = figures(
        cpu_cores=1.0,
        load_cpu_cores=0.99,
        load_cores_allowed=2,
        load_busiest_cores=0.99,
        load_processes=1,
    )
    b = name_bottleneck([h], Thresholds(), embedded_store=True)
    assert b.kind == "client" and b.client_bound
    assert "a load process at 99% of its core" in b.text
    assert "embedded" in b.text
    waiting = figures(
        cpu_cores=2.0, load_processes=1, load_cores_allowed=2, load_busiest_cores=4.27
    )
    b = name_bottleneck([waiting], Thresholds(), embedded_store=False)
    assert b.kind == "client" and b.utilisation == pytest.approx(4.27)
    assert b.text.startswith("a load process asking for 4.27 of 1 core on db1 (its threads' CPU")


def test_client_by_all_load_processes():
    h = figures(
        cpu_cores=1.9,
        load_cpu_cores=1.9,
        load_runqueue_cores=0.04,
        load_cores_allowed=2,
        load_busiest_cores=0.5,
        load_processes=4,
    )
    b = name_bottleneck([h], Thresholds(), embedded_store=True)
    assert b.kind == "client"
    assert b.text.startswith("load processes at 97% of their 2 cores")
    assert b.others  # the host's CPU saturated too, by the same load


def test_a_busy_host_names_its_larger_consumer():
    shared = dict(
        cpu_cores=1.9,
        store_found_by="port 5432",
        store_cores_allowed=2,
        store_processes=9,
        load_cores_allowed=2,
        load_processes=2,
    )
    server = figures(**shared, store_cpu_cores=1.1, load_cpu_cores=0.8)
    b = name_bottleneck([server], Thresholds(), embedded_store=False)
    assert b.kind == "server_cpu" and "host CPU 1.90 of 2 cores" in b.text
    client = figures(**shared, store_cpu_cores=0.7, load_cpu_cores=1.2)
    b = name_bottleneck([client], Thresholds(), embedded_store=False)
    assert b.kind == "client"
    assert b.text == (
        "host CPU 1.90 of 2 cores busy on db1: the load processes 1.20, the store's "
        "processes 0.70 (port 5432), other processes 0.00"
    )


def test_a_host_busy_with_other_processes_names_the_setup():
    busy = figures(
        cpu_cores=1.96,
        store_found_by="port 5432",
        store_cores_allowed=2,
        store_processes=9,
        store_cpu_cores=0.35,
        load_cores_allowed=2,
        load_processes=2,
        load_cpu_cores=0.4,
    )
    b = name_bottleneck([busy], Thresholds(), embedded_store=False)
    assert b.kind == "setup" and not b.client_bound
    assert b.text.endswith("other processes 1.21 (the setup bound it, not the store or the client)")


def test_remote_host_cpu_and_disk_are_the_servers():
    remote = figures(host="db:9100", source="node_exporter", cores=4, cpu_cores=3.8)
    b = name_bottleneck([remote], Thresholds(), embedded_store=False)
    assert b.kind == "server_cpu" and "3.80 of 4 cores" in b.text
    disk = figures(
        host="db:9100",
        source="node_exporter",
        cores=4,
        cpu_cores=1,
        disk_busy=0.97,
        busiest_disk="nvme0n1",
        disk_write_bytes_per_s=2e8,
    )
    b = name_bottleneck([disk], Thresholds(), embedded_store=False)
    assert b.kind == "server_disk" and "disk nvme0n1 busy 97%" in b.text and "200.0 MB/s" in b.text


def test_a_disk_where_no_store_runs_is_not_the_servers():
    client_host = figures(
        cpu_cores=0.2, disk_busy=0.99, load_processes=1, load_cores_allowed=2, load_cpu_cores=0.2
    )
    assert name_bottleneck([client_host], Thresholds(), False).kind == "none"


def test_network_when_its_capacity_is_known():
    h = figures(
        cpu_cores=0.3,
        net_capacity_bytes_per_s=125e6,
        net_tx_bytes_per_s=120e6,
        net_link_bytes_per_s=120e6,
    )
    b = name_bottleneck([h], Thresholds(), embedded_store=False)
    assert b.kind == "network" and "96% of 125.0 MB/s" in b.text
    loopback = figures(cpu_cores=0.3, net_tx_bytes_per_s=5e9)  # capacity unknown
    assert name_bottleneck([loopback], Thresholds(), False).kind == "none"
    # a store on loopback beside a known link: its traffic is not the link's
    beside = figures(cpu_cores=0.3, net_capacity_bytes_per_s=125e6, net_tx_bytes_per_s=5e9)
    assert name_bottleneck([beside], Thresholds(), False).kind == "none"


def test_none_names_the_busiest():
    h = figures(
        cpu_cores=1.24,
        store_cpu_cores=1.24,
        store_cores_allowed=2,
        store_processes=5,
        store_found_by="name postgres",
    )
    b = name_bottleneck([h], Thresholds(), embedded_store=False)
    assert b.kind == "none" and not b.client_bound
    assert b.text == (
        "no resource saturated: the store's latency or locking set the limit (busiest: "
        "server CPU 1.24 of 2 cores on db1 (5 processes, name postgres: 1.24 used + 0.00 "
        "waiting for a core))"
    )


def test_thresholds_are_the_settings():
    h = figures(
        cpu_cores=1.24,
        store_cpu_cores=1.24,
        store_cores_allowed=2,
        store_processes=5,
        store_found_by="name postgres",
    )
    assert name_bottleneck([h], Thresholds(cpu=0.6), False).kind == "server_cpu"


def test_unmeasured_without_samples():
    assert name_bottleneck([], Thresholds(), False).kind == "unmeasured"
    assert name_bottleneck([figures(samples=0)], Thresholds(), False).kind == "unmeasured"


# -- invariants ----------------------------------------------------------------------------

share = st.floats(0, 1.5, allow_nan=False)
cores = st.sampled_from([1, 2, 4, 8])


@st.composite
def host_figures(draw):
    n = draw(cores)
    return figures(
        host=f"h{draw(st.integers(0, 3))}",
        source=draw(st.sampled_from(["agent", "node_exporter", "monitor"])),
        samples=draw(st.integers(0, 5)),
        cores=n,
        cpu_cores=draw(share) * n,
        disk_busy=draw(share),
        net_capacity_bytes_per_s=draw(st.sampled_from([0.0, 1e8])),
        net_rx_bytes_per_s=draw(share) * 1e8,
        net_link_bytes_per_s=draw(share) * 1e8,
        load_processes=draw(st.integers(0, 4)),
        load_cpu_cores=draw(share) * n,
        load_cores_allowed=float(n),
        load_busiest_cores=draw(share),
        store_found_by=draw(st.sampled_from(["", "port 5432"])),
        store_cpu_cores=draw(share) * n,
        store_runqueue_cores=draw(share),
        store_cores_allowed=float(draw(st.integers(1, n))),
    )


limits = st.builds(Thresholds, *[st.floats(0.05, 1.0) for _ in range(4)])


@settings(max_examples=300, deadline=None)
@given(st.lists(host_figures(), max_size=4), limits, st.booleans())
def test_invariants(hosts, thresholds, embedded):
    b = name_bottleneck(hosts, thresholds, embedded)
    assert b.client_bound == (b.kind == "client")
    assert b.text
    if not any(h.samples for h in hosts):
        assert b.kind == "unmeasured"
        return
    # named only at or above its threshold (a host's CPU, whoever used it: the cpu one)
    limit = {
        "client": min(thresholds.client, thresholds.cpu),
        "server_disk": thresholds.disk,
        "network": thresholds.network,
        "server_cpu": thresholds.cpu,
        "setup": thresholds.cpu,
    }
    if b.kind in limit:
        assert b.utilisation >= limit[b.kind]
    # no host shows a saturated resource above the one named ("setup" ranks after the
    # rest: named only when nothing else saturated)
    for other in hosts:
        if other.samples == 0:
            continue
        alone = name_bottleneck([other], thresholds, embedded)
        if alone.kind not in ("none", "unmeasured"):
            assert b.kind not in ("none", "unmeasured")
            if b.kind == "setup":
                assert alone.kind == "setup"
            if alone.kind == b.kind == "setup" or "setup" not in (alone.kind, b.kind):
                assert alone.utilisation <= b.utilisation + 1e-9


@settings(max_examples=200, deadline=None)
@given(st.lists(host_figures(), min_size=1, max_size=3), st.booleans())
def test_below_every_threshold_is_none(hosts, embedded):
    highest = Thresholds(cpu=1.0, client=1.0, disk=1.0, network=1.0)
    quiet = [
        figures(
            host=h.host,
            samples=max(h.samples, 1),
            cores=h.cores,
            cpu_cores=min(h.cpu_cores, 0.99 * h.cores),
            disk_busy=min(h.disk_busy, 0.99),
            load_processes=h.load_processes,
            load_cores_allowed=h.load_cores_allowed,
            load_cpu_cores=min(h.load_cpu_cores, 0.99 * h.load_cores_allowed),
            load_busiest_cores=min(h.load_busiest_cores, 0.99),
        )
        for h in hosts
    ]
    b = name_bottleneck(quiet, highest, embedded)
    assert b.kind == "none" and b.text.startswith("no resource saturated")
    assert b.utilisation < 1.0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-10, 100), st.lists(st.floats(allow_nan=True), max_size=6)),
        max_size=30,
    )
)
def test_summary_of_anything_is_bounded(rows):
    series = {"agent a": [sample(t, cpu=c) for t, c in rows]}
    for h in summarise(series, (0, 50)):
        assert all(0 <= c <= 1 for c in h.cpu_per_core)
        assert 0 <= h.cpu_cores <= h.cores
        named = name_bottleneck([h], Thresholds(), False).kind
        # a host with no core listed has no figure to judge: unmeasured
        assert named == "unmeasured" if h.cores == 0 else named in ("client", "none")
