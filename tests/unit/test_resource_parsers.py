"""The parsers under the resource sampling (bgbench/resources/procfs.py and
node_exporter.py): real /proc files, hand-made and hostile inputs, each bounded and never
raising anything but the errors they name."""

import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgbench.errors import UserError
from bgbench.resources import procfs
from bgbench.resources.node_exporter import (
    MAX_SERIES,
    WANTED,
    Counters,
    ScrapeError,
    cpu_shares,
    endpoint_url,
    parse,
    wanted_lines,
)
from bgbench.resources.processes import StoreWatch

NODE_TEXT = """\
# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} 100
node_cpu_seconds_total{cpu="0",mode="iowait"} 10
node_cpu_seconds_total{cpu="0",mode="system"} 20
node_cpu_seconds_total{cpu="0",mode="user"} 70
node_cpu_seconds_total{cpu="0",mode="steal"} 0
node_cpu_seconds_total{cpu="1",mode="idle"} 200
node_cpu_seconds_total{cpu="1",mode="user"} 0
# TYPE node_memory_MemTotal_bytes gauge
node_memory_MemTotal_bytes 8.0e+09
node_memory_MemAvailable_bytes 6.0e+09
node_memory_MemFree_bytes 1.0e+09
node_disk_read_bytes_total{device="vda"} 1000
node_disk_written_bytes_total{device="vda"} 2000
node_disk_io_time_seconds_total{device="vda"} 5
node_disk_io_time_weighted_seconds_total{device="vda"} 99
node_disk_read_bytes_total{device="dm-0"} 1000
node_network_receive_bytes_total{device="eth0"} 300
node_network_receive_bytes_total{device="eth1"} 200
node_network_transmit_bytes_total{device="eth0"} 100
node_network_speed_bytes{device="eth0"} 1.25e+08
node_network_speed_bytes{device="eth1"} -125000
go_goroutines 8
"""


def test_a_node_exporter_reply_is_read_for_the_wanted_series_only():
    c = parse(NODE_TEXT)
    assert sorted(c.cpu) == [0, 1]
    assert c.cpu[0] == {"idle": 100, "iowait": 10, "system": 20, "user": 70, "steal": 0}
    assert (c.memory_total, c.memory_available) == (8e9, 6e9)
    assert c.disks == {"vda": [1000, 2000, 5]}  # device-mapper left out: a disk's bytes again
    assert (c.net_rx, c.net_tx) == (500, 100)
    assert c.speed == 1.25e8  # the unknown speed (-1 Mb/s) is not counted
    assert (c.link(0), c.link(1)) == (300, 100)  # through eth0 alone: its speed is known


def test_cpu_shares_count_idle_and_iowait_as_not_busy():
    before = parse(NODE_TEXT)
    after = parse(
        NODE_TEXT.replace('mode="idle"} 100', 'mode="idle"} 110')
        .replace('mode="iowait"} 10', 'mode="iowait"} 20')
        .replace('cpu="0",mode="user"} 70', 'cpu="0",mode="user"} 100')
        .replace('cpu="1",mode="idle"} 200', 'cpu="1",mode="idle"} 210')
    )
    shares = cpu_shares(before, after)
    assert shares == pytest.approx([30 / 50, 0.0])


@pytest.mark.parametrize(
    "text",
    [
        "",
        "node_memory_MemTotal_bytes 1\n",  # no CPU series: not a node_exporter
        'node_cpu_seconds_total{cpu="0",mode="idle" 1\n',  # broken labels
        'node_cpu_seconds_total{cpu="0",mode="idle"} one\n',
    ],
)
def test_a_malformed_reply_is_a_scrape_error(text):
    with pytest.raises(ScrapeError):
        parse(text)


def test_too_many_series_are_refused_before_parsing():
    line = 'node_cpu_seconds_total{{cpu="{}",mode="idle"}} 1\n'
    text = "".join(line.format(i) for i in range(MAX_SERIES + 2))
    with pytest.raises(ScrapeError, match="series"):
        wanted_lines(text)


def test_cores_beyond_the_bound_and_odd_values_are_dropped():
    lines = [f'node_cpu_seconds_total{{cpu="{i}",mode="idle"}} 1' for i in range(5000)]
    lines += ['node_cpu_seconds_total{cpu="x",mode="idle"} 1', "node_memory_MemTotal_bytes NaN"]
    c = parse("\n".join(lines) + "\n")
    assert len(c.cpu) == 4096
    assert c.memory_total == 0.0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_reply_parses_or_is_a_scrape_error(text):
    try:
        c = parse(text)
    except ScrapeError:
        return
    assert isinstance(c, Counters) and c.cpu


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(WANTED),
            st.text(alphabet='{}",=\\ .-+eE0123456789abcdefxyzNaInf#\t', max_size=40),
        ),
        max_size=8,
    )
)
def test_wanted_series_with_any_tail_parse_or_are_a_scrape_error(lines):
    text = "".join(name + tail + "\n" for name, tail in lines)
    try:
        c = parse(text)
    except ScrapeError:
        return
    assert c.cpu and all(cpu >= 0 for cpu in c.cpu)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 7), st.sampled_from(["idle", "user", "iowait", "steal"])),
        min_size=1,
        max_size=30,
    ),
    st.lists(st.floats(0, 1e6), min_size=30, max_size=30),
    st.lists(st.floats(0, 1e6), min_size=30, max_size=30),
)
def test_cpu_shares_stay_within_zero_and_one(series, first, second):
    def text(values):
        return "".join(
            f'node_cpu_seconds_total{{cpu="{c}",mode="{m}"}} {v}\n'
            for (c, m), v in zip(series, values, strict=False)
        )

    for share in cpu_shares(parse(text(first)), parse(text(second))):
        assert 0.0 <= share <= 1.0


@pytest.mark.parametrize(
    ("endpoint", "url", "address"),
    [
        ("127.0.0.1:9100", "http://127.0.0.1:9100/metrics", "127.0.0.1:9100"),
        ("http://db1:9100", "http://db1:9100/metrics", "db1:9100"),
        ("https://db1:443/node/metrics", "https://db1:443/node/metrics", "db1:443"),
        ("[::1]:9100", "http://[::1]:9100/metrics", "[::1]:9100"),
    ],
)
def test_an_endpoint_is_host_and_port_or_a_url(endpoint, url, address):
    assert endpoint_url(endpoint) == (url, address)


@pytest.mark.parametrize(
    "endpoint", ["", "db1", "db1:notaport", "db1:99999", "ftp://db1:21", "a b:1", "x" * 600]
)
def test_a_malformed_endpoint_is_a_user_error(endpoint):
    with pytest.raises(UserError):
        endpoint_url(endpoint)


def test_this_process_stat_and_schedstat_parse():
    stat = procfs.parse_stat(procfs.read(f"/proc/{os.getpid()}/stat") or "")
    assert stat is not None and stat.threads >= 1 and stat.rss_pages > 0 and stat.start > 0
    waits = procfs.parse_schedstat(procfs.read(f"/proc/{os.getpid()}/schedstat") or "")
    assert waits is not None and waits[0] > 0


def test_a_process_name_with_spaces_and_parentheses_parses():
    fields = " ".join(str(i) for i in range(3, 53))
    stat = procfs.parse_stat(f"41 (post) gres (x)) {fields}")
    assert stat == procfs.Stat(
        cpu_ticks=14 + 15, threads=20, start=22, rss_pages=24, state="3", parent=4
    )


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_any_stat_or_schedstat_text_parses_or_is_none(text):
    assert procfs.parse_stat(text) is None or procfs.parse_stat(text).threads >= 1
    one = procfs.parse_schedstat(text)
    assert one is None or min(one) >= 0


def test_a_process_with_threads_is_read_per_thread():
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)
    helper.start()
    try:
        stat = procfs.parse_stat(procfs.read(f"/proc/{os.getpid()}/stat") or "")
        assert stat is not None and stat.threads >= 2
        waits = procfs.run_queue_waits(os.getpid(), stat.threads)
        assert os.getpid() in waits and helper.native_id in waits
    finally:
        stop.set()
        helper.join()


@pytest.mark.parametrize(
    ("text", "cores"),
    [
        ("max 100000\n", None),
        ("50000 100000\n", 0.5),
        ("150000 100000", 1.5),
        ("200000", 2.0),  # the period defaults to 100 ms
        ("0 100000", None),
        ("-5 100000", None),
        ("lots 100000", None),
        ("", None),
    ],
)
def test_cpu_max_gives_the_cores_a_quota_allows(text, cores):
    assert procfs.parse_cpu_max(text) == cores


def test_cfs_quota_minus_one_is_no_quota():
    assert procfs.parse_cfs("-1\n", "100000\n") is None
    assert procfs.parse_cfs("250000\n", "100000\n") == 2.5
    assert procfs.parse_cfs("x", "100000") is None


def test_cgroup_lines_give_the_v2_and_v1_cpu_paths():
    text = "12:cpu,cpuacct:/docker/abc\n4:memory:/m\n0::/system.slice/pg.service\nbad\n"
    assert procfs.parse_cgroup(text) == ("/system.slice/pg.service", "/docker/abc")
    assert procfs.parse_cgroup("garbage") == (None, None)


def test_the_tightest_quota_on_the_cgroup_or_an_ancestor_caps(tmp_path):
    """A cgroup tree laid out in a directory, with quotas on a cgroup and its ancestors."""
    cgroup = "0::/a/b\n"
    assert procfs.quota_of(cgroup, root=tmp_path) is None
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "cpu.max").write_text("max 100000\n")
    (tmp_path / "a" / "b" / "cpu.max").write_text("150000 100000\n")
    assert procfs.quota_of(cgroup, root=tmp_path) == 1.5
    (tmp_path / "a" / "cpu.max").write_text("50000 100000\n")
    assert procfs.quota_of(cgroup, root=tmp_path) == 0.5  # the parent's is tighter


def test_a_cgroup_v1_quota_and_a_v2_under_unified_both_count(tmp_path):
    cgroup = "3:cpu,cpuacct:/docker/abc\n0::/x\n"
    (tmp_path / "cpu" / "docker" / "abc").mkdir(parents=True)
    (tmp_path / "cpu" / "docker" / "abc" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpu" / "docker" / "abc" / "cpu.cfs_period_us").write_text("100000\n")
    assert procfs.quota_of(cgroup, root=tmp_path) is None
    (tmp_path / "cpu" / "docker" / "cpu.cfs_quota_us").write_text("300000\n")
    (tmp_path / "cpu" / "docker" / "cpu.cfs_period_us").write_text("100000\n")
    assert procfs.quota_of(cgroup, root=tmp_path) == 3.0
    (tmp_path / "unified" / "x").mkdir(parents=True)
    (tmp_path / "unified" / "x" / "cpu.max").write_text("200000 100000\n")
    assert procfs.quota_of(cgroup, root=tmp_path) == 2.0


def test_a_cgroup_path_cannot_climb_out_of_the_root(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "cpu.max").write_text("100000 100000\n")  # outside the root given
    assert procfs.quota_of("0::/../../..\n", root=tmp_path / "root") is None


def test_this_process_has_a_quota_or_none():
    quota = procfs.cgroup_quota(os.getpid())
    assert quota is None or quota > 0


def test_a_store_watch_goes_through_the_wire_unchanged():
    watch = StoreWatch(pids=(41, 42), names=("postgres",), container="abc123", discover=False)
    message = watch.to_proto()
    assert message.no_discovery
    assert StoreWatch.from_proto(message) == watch
    assert StoreWatch.from_proto(StoreWatch().to_proto()) == StoreWatch()


@pytest.mark.parametrize(
    "options",
    [
        {"pids": (0,)},
        {"pids": (1 << 23,)},
        {"names": ("",)},
        {"names": ("a\nb",)},
        {"names": tuple(f"n{i}" for i in range(65))},
        {"container": "/"},
        {"container": "ab"},
        {"container": "abc;rm -rf"},
    ],
)
def test_a_hostile_store_watch_is_a_user_error(options):
    with pytest.raises(UserError):
        StoreWatch(**options)
