"""The steady window's throughput comes from the actions' own end times, not from when a
(possibly CPU-starved) load process got to publish its counts."""

import threading

import numpy as np
import pytest

from bgbench.coordinator.execution.steady import Ended, Tick, analyse
from bgbench.run_result import RunResult
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.worker.tally import ACTION_DTYPE, ENDED_INTERVAL_S, ActionTally
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import FragmentPlan
from bgbench.workloads.bg.workload import WORKLOAD

S = 1_000_000_000  # ns


def starved_ticks() -> list[Tick]:
    """A load process that got its core back only after the run: every report within the
    10 s run still says 0 actions; the 2,814 arrive with a report past the end."""
    ticks = [Tick(0.5 * (k + 1), 0) for k in range(20)]
    return [*ticks, Tick(12.3, 2814)]


def test_late_reports_alone_read_zero_but_the_end_times_give_the_rate():
    reports_only = analyse([starved_ticks()], 10.0, cut=False)
    assert reports_only.tested and sum(reports_only.window_throughput) == 0  # the defect
    counts = [140] * 20 + [14]  # 2,814 actions by their end times, the last after the run
    steady = analyse([starved_ticks()], 10.0, cut=False, ended_by_agent=[Ended(counts, 0.5, 10.4)])
    assert steady.interval_s == 0.5 and len(steady.throughput) == 20
    assert np.mean(steady.window_throughput) == pytest.approx(280.0)
    assert steady.run_actions_per_s == pytest.approx(281.4)


def test_agents_add_up_interval_by_interval_and_a_short_run_stops_its_series():
    ticks = [[Tick(0.5 * (k + 1), 10 * (k + 1)) for k in range(8)] for _ in range(2)]
    whole = Ended([10] * 8, 0.5, 4.0)
    early = Ended([10] * 4, 0.5, 2.0)  # this agent's run ended at 2 s
    steady = analyse(ticks, 4.0, cut=False, ended_by_agent=[whole, early])
    assert steady.throughput == [40.0] * 4
    stalled = Ended([10, 10], 0.5, 4.0)  # no action ended after 1 s: zeros, not a shorter run
    steady = analyse(ticks, 4.0, cut=False, ended_by_agent=[whole, stalled])
    assert steady.throughput == [40.0, 40.0] + [20.0] * 6


def test_without_end_times_the_reports_still_make_the_series():
    ticks = [[Tick(0.5 * (k + 1), 10 * (k + 1)) for k in range(8)]]
    old_agent = Ended([], 0.0, 4.0)  # an agent that does not send them
    assert analyse(ticks, 4.0, cut=False, ended_by_agent=[old_agent]).throughput == [20.0] * 8


def test_the_tally_counts_actions_by_their_end_time():
    tally = ActionTally(origin_ns=100 * S)
    actions = np.zeros(5, dtype=ACTION_DTYPE)
    actions["end"] = [100 * S + 1, 100 * S + S // 4, 100 * S + S // 2, 101 * S + 3, 99 * S]
    actions["start"] = actions["intended"] = actions["end"] - 1000
    tally.add(actions)
    assert ENDED_INTERVAL_S == 0.5
    assert tally.ended.tolist() == [3, 1, 1]  # one before the origin counts in the first


def test_the_series_merges_and_crosses_the_wire():
    a = RunResult(actions=3, ended_per_interval=[1, 2], ended_interval_s=0.5)
    b = RunResult(actions=4, ended_per_interval=[1, 1, 2], ended_interval_s=0.5)
    merged = RunResult.merge([a, b])
    assert (merged.ended_per_interval, merged.ended_interval_s) == ([2, 3, 2], 0.5)
    back = RunResult.from_proto(merged.to_proto())
    assert (back.ended_per_interval, back.ended_interval_s) == ([2, 3, 2], 0.5)


@pytest.mark.slow
def test_a_crowded_load_process_sends_every_action_by_its_end_time(tmp_path):
    # 600 threads on the null store: the thread that publishes counts waits behind them all
    config = BGConfig.model_validate(
        {
            "database": {"usercount": 1200, "friendcountperuser": 4, "resourcecountperuser": 2},
            "workload": {"mix": {"VP": 1}},
        }
    )
    capacities = FragmentPlan((1.0,), 0.27).capacities
    engine = FragmentEngine(WORKLOAD, config, "null", {"concurrency": "threads"}, capacities, 0)
    engine.prepare()
    stop = threading.Event()
    published: list[int] = []
    try:
        run = engine.run(
            RunSpec("crowded", 600, 1.5, 0, 1, tmp_path / "crowded"),
            stop,
            lambda actions, *_: published.append(actions),
        )
    finally:
        stop.set()
        engine.close()
    assert run.actions > 0 and sum(run.ended_per_interval) == run.actions
    assert run.ended_interval_s == ENDED_INTERVAL_S
    assert published[-1] == run.actions
    steady = analyse([[]], 1.5, cut=False, ended_by_agent=[Ended(run.ended_per_interval, 0.5, 1.5)])
    assert len(steady.throughput) == 3 and min(steady.throughput) > 0
    assert sum(steady.throughput) * 0.5 == sum(run.ended_per_interval[:3])
