"""The live event seam: progress rounds become ticks with merged quantiles, sinks fan out
(a broken one is dropped), and the Prometheus sink's figures follow the events."""

import json

from prometheus_client import generate_latest

from bgbench.coordinator.interfaces.prometheus import MetricsSink
from bgbench.coordinator.records.events import (
    ExperimentEnded,
    ExperimentStarted,
    Fanout,
    JsonLinesSink,
    ProgressTap,
    ProgressTick,
    RatingEnded,
)
from bgbench.protos import new_histogram
from bgbench.protos import worker_pb2 as pb


class Collect:
    def __init__(self) -> None:
        self.events: list = []

    def emit(self, event) -> None:
        self.events.append(event)


def progress(elapsed: float, actions: int, latencies_us: list[int], errors: int = 0):
    h = new_histogram()
    for v in latencies_us:
        h.record_value(v)
    return pb.Progress(
        elapsed_seconds=elapsed,
        actions=actions,
        errors=errors,
        response_hist_delta=h.encode() if latencies_us else b"",
        cpu_percent=50.0,
    )


def test_a_tick_per_round_of_every_agent_with_the_merged_quantiles():
    sink = Collect()
    tap = ProgressTap(sink, ["a:1", "b:2"], "E1", 4, 10.0)
    tap.update(0, progress(0.5, 100, [1000] * 99))
    assert sink.events == []  # b has not reported yet
    tap.update(1, progress(0.5, 50, [9000]))
    (first,) = sink.events
    assert isinstance(first, ProgressTick) and first.experiment_id == "E1"
    assert first.actions == 150 and first.new_actions == 150 and first.latency_count == 100
    assert abs(first.p50_ms - 1.0) < 0.01 and abs(first.p99_ms - 1.0) < 0.01
    assert [a.state for a in first.agents] == ["ok", "ok"]
    tap.update(0, progress(1.0, 300, [2000]))
    tap.update(1, progress(1.0, 100, [4000], errors=2))
    second = sink.events[1]
    assert second.new_actions == 250 and second.errors == 2
    assert second.actions_per_s == (200 / 0.5) + (50 / 0.5)
    assert second.latency_count == 2  # only this round's deltas
    assert abs(second.p99_ms - 4.0) < 0.01 and abs(second.p50_ms - 2.0) < 0.01


def test_a_broken_sink_is_dropped_and_the_others_keep_receiving(tmp_path):
    class Broken:
        def emit(self, event) -> None:
            raise OSError("disk full")

    good, lines = Collect(), JsonLinesSink(tmp_path / "e.jsonl")
    fan = Fanout([Broken(), good, lines])
    fan.emit(ExperimentStarted("E1", "search", 4, 1.0))
    fan.emit(RatingEnded("R1", "done", 10.0, 4, 8))
    lines.close()
    assert len(good.events) == 2 and len(fan.sinks) == 2
    written = [json.loads(x) for x in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert [w["kind"] for w in written] == ["experiment_start", "rating_end"]
    assert written[1]["soar"] == 10.0 and written[1]["socialites"] == 8


def metric(sink: MetricsSink, line_start: str) -> float:
    text = generate_latest(sink.registry).decode()
    (line,) = [x for x in text.splitlines() if x.startswith(line_start + " ")]
    return float(line.split()[-1])


def test_the_prometheus_figures_follow_the_events():
    sink = MetricsSink()
    sink.emit(ExperimentStarted("E1", "final", 16, 2.0))
    tap = ProgressTap(sink, ["a:1"], "E1", 16, 2.0)
    tap.update(0, progress(0.5, 100, [3000] * 10))
    tap.update(0, progress(1.0, 400, [5000] * 10))
    assert metric(sink, "bgbench_threads") == 16
    assert metric(sink, 'bgbench_experiment_phase{phase="final"}') == 1
    assert metric(sink, 'bgbench_experiment_phase{phase="search"}') == 0
    assert metric(sink, "bgbench_actions_total") == 400
    assert metric(sink, "bgbench_throughput_actions_per_second") == 600
    assert abs(metric(sink, 'bgbench_latency_seconds{quantile="0.95"}') - 0.005) < 1e-4
    assert metric(sink, 'bgbench_agent_up{agent="a:1"}') == 1
    ended = ExperimentEnded("E1", "final", 16, 2.0, "fail", ("staleness",), 600.0, 99.0,
                            5.0, 0, 1000, 7, 0.7)  # fmt: skip
    sink.emit(ended)
    assert metric(sink, "bgbench_unpredictable_reads") == 7
    assert abs(metric(sink, "bgbench_unpredictable_reads_ratio") - 0.007) < 1e-9
    assert metric(sink, 'bgbench_experiments_total{verdict="fail"}') == 1
