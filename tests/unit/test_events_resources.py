"""Resources live: each agent's latest host sample (Progress.host) rides on the progress
ticks and the events file, each verdict carries the bottleneck, and the Prometheus sink
exports the hosts' figures (labelled by host, escaped, bounded) and the last bottleneck."""

import json

from prometheus_client import generate_latest
from rich.console import Console

from bgbench.coordinator.interfaces import prometheus_hosts
from bgbench.coordinator.interfaces.prometheus import MetricsSink
from bgbench.coordinator.records.events import (
    ExperimentEnded,
    Fanout,
    JsonLinesSink,
    ProgressTap,
)
from bgbench.coordinator.reports.report import _experiments_table, experiment_line
from bgbench.protos import worker_pb2 as pb
from bgbench.resources.model import Bottleneck, GroupSample, HostSample
from tests.unit.test_events import Collect, metric, progress
from tests.unit.test_resources_result import CLIENT, passing, resources

HOSTILE = 'db"1\\n<script>'


def sampled(host: str, host_id: str, load: float | None, store: float | None) -> pb.HostSample:
    return HostSample(
        host_id=host_id, host=host, source="agent", elapsed_s=0.5, interval_s=0.5,
        cpu_per_core=[0.75, 0.5], memory_used_bytes=3 << 30, memory_total_bytes=8 << 30,
        disk_read_bytes_per_s=1e6, disk_write_bytes_per_s=2e6, disk_busy=0.4,
        busiest_disk="sda", net_rx_bytes_per_s=5e5, net_tx_bytes_per_s=7e5,
        load=None if load is None else GroupSample(cpu_cores=load, cores_allowed=2, processes=1),
        store=None if store is None else GroupSample(cpu_cores=store, cores_allowed=2,
                                                     processes=9, found_by="port 5432"),
    ).to_proto()  # fmt: skip


def with_host(elapsed: float, actions: int, host: pb.HostSample) -> pb.Progress:
    p = progress(elapsed, actions, [1000] * 5)
    p.host.CopyFrom(host)
    return p


def test_each_agents_latest_host_sample_rides_on_the_tick_and_into_the_events_file(tmp_path):
    got, lines = Collect(), JsonLinesSink(tmp_path / "e.jsonl")
    tap = ProgressTap(Fanout([got, lines]), ["a:1", "b:2"], "E1", 4, 10.0)
    tap.update(0, with_host(0.5, 10, sampled("db1", "boot-db1", 0.3, 1.1)))
    tap.update(1, progress(0.5, 10, [1000]))  # an agent of an older protocol: no host
    tap.update(0, with_host(1.0, 20, sampled("db1", "boot-db1", 0.4, 1.2)))
    tap.update(1, progress(1.0, 20, [1000]))
    lines.close()
    last = got.events[-1]
    a, b = last.agents
    assert b.host is None
    assert a.host.host == "db1" and a.host.cores == 2 and a.host.cpu_cores == 1.25
    assert (a.host.load_cpu_cores, a.host.store_cpu_cores) == (0.4, 1.2)  # the latest
    (written,) = [json.loads(x) for x in (tmp_path / "e.jsonl").read_text().splitlines()][-1:]
    assert written["agents"][0]["host"]["store_cpu_cores"] == 1.2
    assert written["agents"][0]["host"]["disk_busy"] == 0.4
    assert written["agents"][1]["host"] is None


def ended(**bottleneck) -> ExperimentEnded:
    return ExperimentEnded("E1", "final", 16, 2.0, "pass", (), 600.0, 99.0, 5.0, 0, 1000, 0,
                           0.0, **bottleneck)  # fmt: skip


def test_prometheus_exports_each_hosts_figures_and_the_last_bottleneck():
    sink = MetricsSink()
    tap = ProgressTap(sink, ["a:1", "b:2", "c:3"], "E1", 16, 2.0)
    # two agents on one host (its load processes summed), one on the store's host
    tap.update(0, with_host(0.5, 10, sampled("client", "boot-c", 0.5, None)))
    tap.update(1, with_host(0.5, 10, sampled("client", "boot-c", 0.25, None)))
    tap.update(2, with_host(0.5, 10, sampled(HOSTILE, "boot-db", None, 1.5)))
    assert metric(sink, 'bgbench_host_cpu_busy_cores{host="client"}') == 1.25
    assert metric(sink, 'bgbench_host_cores{host="client"}') == 2
    assert metric(sink, 'bgbench_load_cpu_cores{host="client"}') == 0.75
    assert metric(sink, 'bgbench_host_disk_busy_ratio{host="client"}') == 0.4
    assert (
        metric(sink, 'bgbench_host_network_bytes_per_second{direction="tx",host="client"}') == 7e5
    )
    assert metric(sink, 'bgbench_host_memory_used_bytes{host="client"}') == 3 << 30
    # a host's name from the network is escaped in the exposition: one well-formed line
    assert metric(sink, 'bgbench_store_cpu_cores{host="db\\"1\\\\n<script>"}') == 1.5
    sink.emit(ended(bottleneck_kind="server_cpu", bottleneck="server CPU 1.96 of 2 cores",
                    bottleneck_host="db1", bottleneck_utilisation=0.98))  # fmt: skip
    label = 'host="db1",kind="server_cpu",text="server CPU 1.96 of 2 cores"'
    assert metric(sink, "bgbench_bottleneck_utilisation_ratio{" + label + "}") == 0.98
    assert metric(sink, "bgbench_client_bound") == 0
    client = "load processes at 97% of 2 cores"
    sink.emit(ended(bottleneck_kind="client", bottleneck=client, bottleneck_host="client",
                    bottleneck_utilisation=0.97, client_bound=True))  # fmt: skip
    text = generate_latest(sink.registry).decode()
    assert "server_cpu" not in text  # the last experiment's only
    assert metric(sink, "bgbench_client_bound") == 1
    sink.emit(ended())  # resources not measured: the last measured one stays
    assert metric(sink, "bgbench_client_bound") == 1


def test_hosts_beyond_the_bound_get_no_series():
    sink = MetricsSink()
    n = prometheus_hosts.MAX_HOSTS + 5
    tap = ProgressTap(sink, [f"a:{i}" for i in range(n)], "E1", n, 2.0)
    for i in range(n):
        tap.update(i, with_host(0.5, 1, sampled(f"h{i}", f"boot-{i}", 0.1, None)))
    text = generate_latest(sink.registry).decode()
    series = [x for x in text.splitlines() if x.startswith("bgbench_host_cores{")]
    assert len(series) == prometheus_hosts.MAX_HOSTS


def test_a_verdict_carries_what_bound_the_experiment_and_the_console_line_says_it():
    result = passing()
    assert ExperimentEnded.of("final", result).bottleneck_kind == ""  # not measured
    assert "bottleneck" not in experiment_line("final", result, 100.0)
    result.resources = resources(CLIENT)
    event = ExperimentEnded.of("final", result)
    assert (event.bottleneck_kind, event.client_bound, event.bottleneck_host) == (
        "client",
        True,
        "vm",
    )
    assert event.bottleneck == CLIENT.text and event.bottleneck_utilisation == 0.97
    first, second = experiment_line("final", result, 100.0).splitlines()
    assert first.strip().startswith("final T=4") and second.strip() == (
        f"CLIENT-BOUND: {CLIENT.text}"
    )
    server = Bottleneck("server_cpu", "server CPU", "db", 1.9, 2, 0.95, "server CPU 1.90 of 2")
    result.resources = resources(server)
    assert experiment_line("final", result, 100.0).splitlines()[1].strip() == (
        "bottleneck: server CPU 1.90 of 2"
    )


def test_a_recorded_ratings_table_has_a_bottleneck_column_when_any_was_measured():
    result = passing()
    result.resources = resources(CLIENT)
    row = {"seq": 1, "phase": "final", "threads": 4, "duration_s": 4.0, "status": "passed",
           "reasons": "", "actions_per_s": 10.0, "within_percent": 100.0,
           "unpredictable_percent": 0.0, "result_json": json.dumps(result.to_record())}  # fmt: skip
    bare = {**row, "seq": 2, "result_json": json.dumps(passing().to_record())}
    console = Console(width=300, record=True)
    console.print(_experiments_table([row, bare], None))  # type: ignore[arg-type]
    shown = console.export_text()
    assert "bottleneck" in shown and "CLIENT-BOUND: a load process at 97%" in shown
    console = Console(width=300, record=True)
    console.print(_experiments_table([bare], None))  # type: ignore[arg-type]
    assert "bottleneck" not in console.export_text()
