"""Open-loop load (a target rate): arrivals on a seeded schedule whatever the store's pace,
with response times counted from each arrival, so a stalled store is not hidden
(coordinated omission); and the agent splitting its rate over its load processes."""

import asyncio
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.agents import spawn_local_agents
from bgbench.coordinator.execution.experiment import Cluster
from bgbench.errors import UserError
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result import RunResult
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.actions import Action
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import FragmentPlan
from bgbench.workloads.bg.stores.null import (
    NullAsyncConnection,
    NullBinding,
    NullConnection,
    NullOptions,
)
from bgbench.workloads.bg.workload import WORKLOAD

CAPACITIES = FragmentPlan((1.0,), 0.27).capacities
CONCURRENCY = ["asyncio", "threads"]


def config(users: int = 500, **workload: object) -> BGConfig:
    return BGConfig.model_validate(
        {
            "database": {"usercount": users, "commentcountperresource": 2, "confperc": 0.6},
            "workload": {"mix": {"VP": 1}, **workload},  # one action per arrival
        }
    )


def null_engine(concurrency: str, binding: NullBinding | None = None) -> FragmentEngine:
    engine = FragmentEngine(
        WORKLOAD, config(), "null", {"concurrency": concurrency}, CAPACITIES, 0, binding=binding
    )
    engine.prepare()
    return engine


def run(
    engine: FragmentEngine,
    tmp: Path,
    name: str,
    threads: int,
    duration: float,
    rate: float = 0.0,
    arrivals: str = "poisson",
    publish=None,  # type: ignore[no-untyped-def]
) -> tuple[RunResult, np.ndarray]:
    spec = RunSpec(name, threads, duration, 0, 7, tmp / name, target_rate=rate, arrivals=arrivals)
    summary = engine.run(spec, threading.Event(), publish or (lambda *_: None))
    return summary, np.load(tmp / name / "actions-f0.npy")


@pytest.mark.parametrize("concurrency", CONCURRENCY)
def test_a_target_rate_is_kept_and_is_not_the_closed_loop(tmp_path, concurrency):
    engine = null_engine(concurrency)
    try:
        rate = 400.0
        summary, actions = run(engine, tmp_path, "open", threads=8, duration=3.0, rate=rate)
        assert summary.errors == 0 and not summary.aborted, summary.aborted
        achieved = summary.actions / 3.0
        assert 0.85 * rate <= achieved <= 1.15 * rate, achieved
        assert np.all(actions["intended"] <= actions["start"])
        closed, _ = run(engine, tmp_path, "closed", threads=8, duration=1.0)
        assert closed.actions / closed.elapsed > 5 * achieved  # the store could go far faster
    finally:
        engine.close()


def gaps_ns(actions: np.ndarray) -> np.ndarray:
    return np.diff(np.sort(actions["intended"])).astype(np.float64)


@pytest.mark.parametrize("concurrency", CONCURRENCY)
def test_constant_arrivals_are_evenly_spaced_and_poisson_ones_are_exponential(
    tmp_path, concurrency
):
    engine = null_engine(concurrency)
    try:
        rate = 300.0
        _, even = run(engine, tmp_path, "even", 4, 2.0, rate, "constant")
        gaps = gaps_ns(even)
        assert len(gaps) > 300
        assert np.allclose(gaps, 1e9 / rate, atol=2)  # ns: the schedule, not the clock
        _, random1 = run(engine, tmp_path, "poisson", 4, 2.0, rate, "poisson")
        gaps = gaps_ns(random1)
        assert len(gaps) > 300
        assert 0.8 * 1e9 / rate <= gaps.mean() <= 1.2 * 1e9 / rate
        cv = gaps.std() / gaps.mean()
        assert 0.8 <= cv <= 1.2, cv  # exponential gaps: CV 1 (constant ones: 0)
        # seeded: the same experiment draws the same gaps
        spec = RunSpec("poisson", 4, 1.0, 0, 7, tmp_path / "again", target_rate=rate)
        engine.run(spec, threading.Event(), lambda *_: None)
        again = gaps_ns(np.load(tmp_path / "again" / "actions-f0.npy"))
        n = min(len(again), len(gaps)) - 5  # the last arrivals may miss the stop
        assert n > 100
        assert np.allclose(again[:n], gaps[:n], atol=2)
    finally:
        engine.close()


class StallingNull(NullBinding):
    """The null store whose View Profile, once armed, stalls every caller until released:
    a store that stops answering for a while, as a GC pause or a failover does."""

    def __init__(self, concurrency: str, runners: int) -> None:
        super().__init__(NullOptions(concurrency=concurrency))  # type: ignore[arg-type]
        self.runners = runners
        self.armed = threading.Event()
        self.release = threading.Event()
        self.all_stalled = threading.Event()
        self.first_stalled_ns = 0
        self._stalled = 0
        self._lock = threading.Lock()

    def _stall(self) -> None:
        with self._lock:
            self.first_stalled_ns = self.first_stalled_ns or time.monotonic_ns()
            self._stalled += 1
            if self._stalled >= self.runners:
                self.all_stalled.set()
        self.release.wait()

    def connect(self) -> NullConnection:
        conn = NullConnection(self)
        real = conn.view_profile

        def view_profile(requester: int, member: int):  # type: ignore[no-untyped-def]
            if self.armed.is_set() and not self.release.is_set():
                self._stall()
            return real(requester, member)

        conn.view_profile = view_profile  # type: ignore[method-assign]
        return conn

    async def connect_async(self) -> NullAsyncConnection:
        conn = NullAsyncConnection(self)
        real = conn.view_profile

        async def view_profile(requester: int, member: int):  # type: ignore[no-untyped-def]
            if self.armed.is_set() and not self.release.is_set():
                await asyncio.get_running_loop().run_in_executor(None, self._stall)
            return await real(requester, member)

        conn.view_profile = view_profile  # type: ignore[method-assign]
        return conn


def p99_us(hist: bytes) -> int:
    return int(HdrHistogram.decode(hist).get_value_at_percentile(99))


@pytest.mark.parametrize("concurrency", CONCURRENCY)
def test_a_stalled_store_inflates_response_time_not_service_time(tmp_path, concurrency):
    threads, rate, stall_s = 2, 200.0, 0.6
    store = StallingNull(concurrency, threads)
    engine = null_engine(concurrency, binding=store)
    warmed = threading.Event()
    outcome: dict[str, tuple[RunResult, np.ndarray]] = {}

    def publish(actions: int, *_: object) -> None:
        if actions >= 50:
            warmed.set()

    def experiment() -> None:
        outcome["run"] = run(engine, tmp_path, "stall", threads, 3.0, rate, "constant", publish)

    runner = threading.Thread(target=experiment)
    runner.start()
    try:
        assert warmed.wait(30), "no actions before the stall"
        store.armed.set()
        assert store.all_stalled.wait(30), "the store never stalled every socialite"
        time.sleep(stall_s)  # the stall itself: arrivals keep coming and queue meanwhile
        released_ns = time.monotonic_ns()
        store.release.set()
        runner.join(60)
        assert not runner.is_alive()
    finally:
        store.release.set()
        runner.join(60)
        engine.close()
    summary, actions = outcome["run"]
    assert summary.errors == 0
    assert not summary.aborted, summary.aborted  # queueing the store made is not the client's
    vp = summary.per_action[Action.VP.name]
    response_p99, service_p99 = p99_us(vp.response_hist), p99_us(vp.service_hist)
    assert response_p99 >= 300_000, response_p99  # us: the stall is in the response times
    assert service_p99 < 100_000, service_p99  # but not in the store's service times
    assert response_p99 > 5 * service_p99
    # The arrivals during the stall waited in the queue, then were served quickly: their
    # response minus service time is that wait, from their arrival to the release.
    queued = actions[
        (actions["intended"] > store.first_stalled_ns)
        & (actions["intended"] < released_ns)
        & (actions["start"] >= released_ns)
    ]
    assert len(queued) >= 0.5 * rate * stall_s, len(queued)
    wait = queued["start"] - queued["intended"]
    assert np.all(wait >= released_ns - queued["intended"])
    assert np.all(wait <= released_ns - queued["intended"] + 300_000_000)  # drained at once
    response = queued["end"] - queued["intended"]
    service = queued["end"] - queued["start"]
    assert np.array_equal(response - service, wait)
    assert np.median(service) < 20_000_000 < np.median(response)


def test_an_open_loop_with_an_interarrival_time_is_refused(tmp_path):
    engine = FragmentEngine(WORKLOAD, config(interarrivaltime=10), "null", {}, CAPACITIES, 0)
    engine.prepare()
    try:
        with pytest.raises(UserError, match="interarrivaltime"):
            run(engine, tmp_path, "both", 2, 0.5, rate=100.0)
        with pytest.raises(UserError, match="target_rate"):
            run(engine, tmp_path, "nan", 2, 0.5, rate=float("nan"))
    finally:
        engine.close()


@pytest.fixture
def agent(tmp_path):
    agents = spawn_local_agents(1, 2, tmp_path, timeout=60)  # one agent, two load processes
    try:
        yield agents
    finally:
        agents.close()


def test_an_agent_splits_its_rate_by_threads_and_refuses_a_bad_one(agent, tmp_path):
    settings = load_settings(
        None,
        [parse_override("store.name=null"), parse_override("usercount=1000"),
         parse_override("bg.workload.mix=VP")],
    )  # fmt: skip
    cluster = Cluster.connect(agent.addresses, None)
    try:
        cluster.prepare(settings)
        client = cluster.clients[0]
        for bad in (-5.0, float("inf")):
            with pytest.raises(UserError, match="target_rate"):
                list(client.run(pb.RunRequest(experiment_id="bad", threads=3, target_rate=bad)))
        with pytest.raises(UserError, match="arrivals"):
            list(client.run(pb.RunRequest(experiment_id="bad", threads=3, arrivals="bursty")))
        request = pb.RunRequest(
            experiment_id="split",
            threads=3,  # 2 + 1 over the two load processes: 200 + 100 arrivals/s
            duration_seconds=2.0,
            seed=3,
            start_state="carry",
            target_rate=300.0,
            arrivals="constant",
        )
        events = list(client.run(request))
    finally:
        cluster.close()
    result = events[-1].result
    assert not result.aborted and result.errors == 0, result.aborted
    assert 0.85 * 600 <= result.actions <= 1.15 * 600, result.actions
    progress = [e.progress for e in events if e.HasField("progress")]
    # twice a second, not once: 0.5, 1.0 and 1.5 s into the 2 s run
    assert len([p for p in progress if p.elapsed_seconds < 1.9]) >= 3
    for fragment, share in ((0, 200.0), (1, 100.0)):
        actions = np.load(Path(result.log_dir) / f"actions-f{fragment}.npy")
        assert np.allclose(np.diff(np.sort(actions["intended"])), 1e9 / share, atol=2)
