"""The live view takes its response times from the recorders' flushed batches: every
action of a run is in exactly one cut, on an event loop and with threads alike."""

import threading
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

from bgbench.validation.logformat import LogWriter
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.worker.measurement import LiveLatencies, Recorder
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import FragmentPlan
from bgbench.workloads.bg.workload import WORKLOAD

CAPACITIES = FragmentPlan((1.0,), 0.27).capacities


def _act(rec: Recorder, runner: int, response_ns: int) -> None:
    rec.acts.extend((1, 0, runner, 1_000, 1_000, 1_000 + response_ns, runner << 40))
    rec.maybe_flush()


def test_a_threads_recorder_flushes_at_its_next_action_after_a_cut(tmp_path):
    log = LogWriter(tmp_path / "t.bglog")
    rec = Recorder(log, threading.Lock())
    live = LiveLatencies([rec])
    _act(rec, 0, 5_000_000)
    _act(rec, 0, 7_000_000)
    # another thread's cut only asks: the two actions stay with their runner for now
    assert HdrHistogram.decode(live.cut()).get_total_count() == 0
    assert len(rec.acts) == 14
    _act(rec, 0, 9_000_000)  # the runner's next action flushes all three
    assert rec.acts == []
    shipped = HdrHistogram.decode(live.cut())
    assert shipped.get_total_count() == 3
    assert shipped.get_max_value() >= 9_000  # µs
    _act(rec, 0, 1_000_000)
    assert HdrHistogram.decode(live.cut(final=True)).get_total_count() == 1
    log.close()


@pytest.mark.parametrize("concurrency", ["asyncio", "threads"])
def test_every_action_is_in_one_live_cut(tmp_path: Path, concurrency: str):
    config = BGConfig.model_validate(
        {"database": {"usercount": 2000}, "workload": {"mix": "low", "interarrivaltime": 1}}
    )
    options = {"concurrency": concurrency}
    engine = FragmentEngine(WORKLOAD, config, "null", options, CAPACITIES, 0)
    engine.prepare()
    cuts: list[int] = []

    def publish(actions, errors, sessions, delta, late, timeouts):
        if delta is not None:
            cuts.append(HdrHistogram.decode(delta).get_total_count())

    spec = RunSpec("live", 8, 2.5, 0, 7, tmp_path / "live")
    summary = engine.run(spec, threading.Event(), publish)
    engine.close()
    assert not summary.aborted, summary.aborted
    assert summary.actions > 0
    assert sum(cuts) == summary.actions  # nothing lost, nothing twice
    assert sum(1 for n in cuts[:-1] if n) >= 2  # shipped while the run went on, not at the end
