"""The engine's socialites as tasks on one event loop: they validate clean, they scale to
thousands without client-made tails, and a client that delays its own actions says so."""

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from bgbench.run_result import RunResult
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.actions import Action
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import FragmentPlan
from bgbench.workloads.bg.stores.null import NullAsyncConnection, NullBinding, NullOptions
from bgbench.workloads.bg.workload import WORKLOAD

PLAN = FragmentPlan((1.0,), 0.27)
CAPACITIES = PLAN.capacities


def config(mix="sessions", users=3000, **workload) -> BGConfig:
    return BGConfig.model_validate(
        {
            "database": {"usercount": users, "commentcountperresource": 2, "confperc": 0.6},
            "workload": {"mix": mix, **workload},
        }
    )


def run(
    engine: FragmentEngine, tmp: Path, name: str, threads: int, duration: float, publish=None
) -> RunResult:
    spec = RunSpec(name, threads, duration, 0, 7, tmp / name)
    return engine.run(spec, threading.Event(), publish or (lambda *_: None))


def p99_us(summary: RunResult, action: str) -> int:
    hist = HdrHistogram.decode(summary.per_action[action].response_hist)
    return int(hist.get_value_at_percentile(99))


def test_tasks_play_every_action_and_session_and_validate_clean(tmp_path):
    engine = FragmentEngine(WORKLOAD, config(), "null", {}, CAPACITIES, 0)
    assert engine.concurrency == "asyncio"
    engine.prepare()
    summary = run(engine, tmp_path, "s1", threads=64, duration=1.0)
    assert summary.errors == 0 and not summary.aborted, summary.aborted
    assert set(summary.per_action) == {a.name for a in Action}
    assert summary.actions > summary.sessions > 0
    assert summary.concurrency == "asyncio"
    result = engine.validate(tmp_path / "s1")
    assert result.log_records == summary.log_records > 0
    assert result.reads > 0 and result.writes > 0
    assert result.unpredictable_reads == 0
    # BG's picture carried over: a second run from it validates too
    run(engine, tmp_path, "s2", threads=64, duration=0.5)
    assert engine.validate(tmp_path / "s2").unpredictable_reads == 0
    engine.close()


def test_thousands_of_tasks_make_no_write_tails(tmp_path):
    """With one OS thread per socialite, writes waited hundreds of ms for BG's bookkeeping
    lock and the interpreter at this T; as tasks they wait for nothing."""
    engine = FragmentEngine(WORKLOAD, config("high", users=8000), "null", {}, CAPACITIES, 0)
    engine.prepare()
    summary = run(engine, tmp_path, "w", threads=2048, duration=1.5)
    assert not summary.aborted, summary.aborted
    writes = [a for a in ("IF", "AFR", "RFR", "TF", "PCR", "DCR") if a in summary.per_action]
    assert writes
    # generous for a busy machine; the old engine's write p99 here was seconds
    assert max(p99_us(summary, a) for a in writes) < 50_000
    assert engine.validate(tmp_path / "w").unpredictable_reads == 0
    engine.close()


class LoopBlockingNull(NullBinding):
    """A store whose every call holds the event loop (a blocking call inside an async
    binding): every other task's timers fire late."""

    def __init__(self, hold_s: float) -> None:
        super().__init__(NullOptions())
        self.hold_s = hold_s

    async def connect_async(self):  # type: ignore[no-untyped-def]
        conn = NullAsyncConnection(self)
        hold = self.hold_s
        real = conn.view_profile

        async def view_profile(requester: int, member: int):  # type: ignore[no-untyped-def]
            time.sleep(hold)  # the defect this test stands for: a blocking call on the loop
            return await real(requester, member)

        conn.view_profile = view_profile  # type: ignore[method-assign]
        return conn


def test_a_client_that_delays_its_own_actions_fails_as_client_overloaded(tmp_path):
    """Each task wants an action every 5 ms; each call holds the loop 10 ms. The actions
    start later and later after their intended start: the client, not the store, made
    those response times."""
    binding = LoopBlockingNull(0.01)
    engine = FragmentEngine(
        WORKLOAD,
        config({"VP": 1}, users=500, interarrivaltime=5),
        "null",
        {},
        CAPACITIES,
        0,
        binding=binding,
    )
    engine.prepare()
    lags: list[float] = []
    summary = run(
        engine, tmp_path, "late", threads=20, duration=1.5,
        publish=lambda *args: lags.append(args[4]),
    )  # fmt: skip
    assert summary.aborted.startswith("client overloaded: "), summary.aborted
    assert "store stopped answering" not in summary.aborted
    delays = HdrHistogram.decode(summary.client_delay_hist)
    assert delays.get_value_at_percentile(99) > 100_000  # us
    assert max(lags) >= 9  # ms: the progress stream saw the loop held
    assert summary.loop_lag_max_ms >= 9


def test_a_prompt_client_is_not_overloaded(tmp_path):
    engine = FragmentEngine(
        WORKLOAD, config({"VP": 1}, users=500, interarrivaltime=5), "null", {}, CAPACITIES, 0
    )
    engine.prepare()
    summary = run(engine, tmp_path, "prompt", threads=20, duration=1.0)
    assert not summary.aborted, summary.aborted
    per_task = summary.actions / 20
    assert 100 <= per_task <= 210  # one action each 5 ms for 1 s, paced by the schedule
    engine.close()


@pytest.mark.parametrize("concurrency", ["asyncio", "threads"])
def test_both_engines_log_the_same_kinds_of_records(tmp_path, concurrency):
    options = {"concurrency": concurrency}
    engine = FragmentEngine(WORKLOAD, config("low", users=1000), "null", options, CAPACITIES, 0)
    assert engine.concurrency == concurrency
    engine.prepare()
    summary = run(engine, tmp_path, concurrency, threads=8, duration=0.5)
    actions = np.load(tmp_path / concurrency / "actions-f0.npy")
    assert len(actions) == summary.actions > 0
    assert (actions["start"] >= actions["intended"]).all()
    assert (actions["end"] >= actions["start"]).all()
    assert set(np.unique(actions["thread"]).tolist()) == set(range(8))
    result = engine.validate(tmp_path / concurrency)
    assert result.log_records == summary.log_records > 0
    assert result.unpredictable_reads == 0
    engine.close()
