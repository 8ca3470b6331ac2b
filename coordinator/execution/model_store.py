"""The model store (`--store model`): a simulated store whose behaviour is a formula of T.

It stands in for agents and a store at once, on a virtual clock (nothing sleeps),
so the rating search can be checked on SoARs from 500 to 10^8 actions/s in
seconds:

- throughput X(T): the paper's concave quadratic a*T - b*T^2 with its vertex worth
  `peak` at `peak_threads` (default sqrt(peak): the paper's b = 1), or a saturating
  `rate_at_one * sqrt(T)`;
- response time: lognormal with mean T / X(T) (Little's law, closed loop) and
  spread sigma, so the share within beta falls as T grows;
- unpredictable reads: `unpredictable_per_thread` percent per thread;
- noise: each progress interval's throughput varies by a seeded normal factor of
  coefficient of variation `noise` (its latency follows by Little's law), and `ramp_s`
  seconds of warm-up climb from a third of the rate; the experiment's progress series
  goes through the same steady-state analysis as agents' (coordinator/execution/steady.py);
- open loop (`run.target_rate`): below the capacity X(T) the store serves the rate,
  with M/M/1-like response time; above it the queue grows for the whole experiment.
"""

import math
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bgbench.coordinator.configuration.config import ModelConfig, RatingConfig, Settings, SLAConfig
from bgbench.coordinator.configuration.plan import split_threads
from bgbench.coordinator.execution.experiment import rate_steady
from bgbench.coordinator.execution.steady import Tick
from bgbench.coordinator.execution.target import (
    ExperimentTarget,
    FaultRecorder,
    count_sessions,
    target_versions,
)
from bgbench.coordinator.records.events import EventSink, Say
from bgbench.coordinator.records.metrics import LatencySummary, judge
from bgbench.run_result import AgentOutcome, ExperimentResult

TICK_S = 0.25  # the model's progress interval (agents report at this period too)

Z = {50: 0.0, 95: 1.6448536, 99: 2.3263479, 99.9: 3.0902323}
READ_SHARE = 0.9  # of actions that read a tracked item


def _normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


@dataclass
class ModelStore:
    model: ModelConfig
    sla: SLAConfig
    rating: RatingConfig = field(default_factory=RatingConfig)
    seed: int = 1
    clock_s: float = 0.0  # virtual time spent in experiments
    _threads: int = 0  # the experiment's T, while it runs

    def describe(self) -> str:
        m = self.model
        if m.curve == "quadratic":
            return f"model store: quadratic, peak {m.peak:g} actions/s at T={self.vertex:g}"
        return f"model store: {m.rate_at_one:g} * sqrt(T) actions/s"

    @property
    def vertex(self) -> float:
        return self.model.peak_threads or math.sqrt(self.model.peak)

    def throughput(self, threads: int) -> float:
        m = self.model
        if m.curve == "sqrt":
            return m.rate_at_one * math.sqrt(threads)
        v = self.vertex
        return max(0.0, m.peak * (2 * threads / v - (threads / v) ** 2))

    def _latency(self, threads: int, x: float) -> tuple[float, float]:
        """(median, sigma) of the lognormal response time, in ms."""
        mean_ms = 1000.0 * threads / x
        s = self.model.spread
        return mean_ms * math.exp(-s * s / 2), s

    def _within(self, median: float, sigma: float) -> float:
        if sigma == 0:
            return 100.0 if median <= self.sla.beta_ms else 0.0
        return 100.0 * _normal_cdf((math.log(self.sla.beta_ms) - math.log(median)) / sigma)

    def _ticks(
        self, x: float, threads: int, workers: list[int], duration_s: float, experiment_id: str
    ) -> tuple[list[list[Tick]], list[float]]:
        """Each worker's progress ticks, and its mean share within beta over the run."""
        m = self.model
        rng = np.random.default_rng([self.seed, zlib.crc32(experiment_id.encode())])
        n = max(1, round(duration_s / TICK_S))
        times = np.arange(1, n + 1) * (duration_s / n)
        ramp = np.minimum(1.0, (1 + 2 * times / m.ramp_s) / 3) if m.ramp_s else np.ones(n)
        ticks: list[list[Tick]] = []
        withins: list[float] = []
        for t in workers:
            factor = np.maximum(0.05, 1 + m.noise * rng.standard_normal(n)) if m.noise else 1.0
            rates = x * t / threads * ramp * factor
            cumulative = np.round(np.cumsum(rates * (duration_s / n))).astype(np.int64)
            ended = np.diff(cumulative, prepend=0)
            within = np.array([self._within(*self._latency(t, r)) if r > 0 else 0.0 for r in rates])
            hits = np.round(ended * within / 100).astype(np.int64)
            ticks.append(
                [
                    Tick(float(times[i]), int(cumulative[i]), int(ended[i]), int(hits[i]))
                    for i in range(n)
                ]
            )
            withins.append(100.0 * hits.sum() / ended.sum() if ended.sum() else 0.0)
        return ticks, withins

    def _open_loop(self, threads: int, rate: float, duration_s: float) -> tuple[float, float]:
        """(throughput, mean response ms) of an open-loop experiment at `rate` actions/s."""
        capacity = self.throughput(threads)
        if capacity <= 0:
            return 0.0, math.inf
        service_ms = 1000.0 * threads / capacity
        rho = rate / capacity
        if rho < 0.999:
            return rate, service_ms / (1 - rho)
        # at capacity the queue grows all along: the mean action waited half the backlog
        backlog_s = duration_s * max(0.0, rho - 1) / rho
        return min(rate, capacity), 1000 * service_ms + 1000 * backlog_s / 2

    def _summary(self, x: float, mean_ms: float, duration_s: float) -> LatencySummary:
        if x <= 0:
            return LatencySummary(0, 0, 0, 0, 0, 0)
        s = self.model.spread
        median = mean_ms * math.exp(-s * s / 2)
        return LatencySummary(
            count=int(x * duration_s),
            p50_ms=median * math.exp(s * Z[50]),
            p95_ms=median * math.exp(s * Z[95]),
            p99_ms=median * math.exp(s * Z[99]),
            max_ms=median * math.exp(s * Z[99.9]),
            mean_ms=mean_ms,
        )

    def _queued(self, ticks: list[list[Tick]], x: float, mean_ms: float) -> float:
        """Open loop: the queue, not Little's law, sets the latency: one level for the run
        (every tick's share within beta is set to it)."""
        s = self.model.spread
        within_all = self._within(mean_ms * math.exp(-s * s / 2), s) if x > 0 else 0.0
        for row in ticks:
            for tick in row:
                tick.within = round(tick.ended * within_all / 100)
        return within_all

    def _agent(
        self, worker: int, threads: int, actions: int, within: float, x: float, duration_s: float
    ) -> AgentOutcome:
        """Worker `worker`'s outcome: `threads` of the experiment's, `actions` played,
        `within` percent within beta, at the experiment's throughput `x`."""
        reads = int(actions * READ_SHARE)
        unpredictable = min(100.0, self.model.unpredictable_per_thread * self._threads)
        out = AgentOutcome(
            address=f"model-worker-{worker}",
            threads=threads,
            actions=actions,
            sessions=actions,
            elapsed_s=duration_s,
            load_processes=1,
            within_percent=within if threads else 100.0,
            session_within_percent=within if threads else 100.0,
            reads=reads,
            unpredictable_reads=round(reads * unpredictable / 100),
            start_state="model",
        )
        verdict = judge(out.within_percent, out.unpredictable_percent, 0, False, self.sla)
        if threads and x <= 0:
            verdict.passed = False
            verdict.reasons.append("throughput: the model store serves nothing at this T")
        out.passed, out.reasons = verdict.passed, verdict.reasons
        return out

    def experiment(
        self, threads: int, duration_s: float, experiment_id: str, rate: float | None = None
    ) -> ExperimentResult:
        self.clock_s += duration_s
        self._threads = threads
        if rate:
            x, mean_ms = self._open_loop(threads, rate, duration_s)
        else:
            x = self.throughput(threads)
            mean_ms = 1000.0 * threads / x if x > 0 else math.inf
        shares = split_threads(threads, [1.0] * self.model.workers)
        ticks, withins = self._ticks(x, threads, shares, duration_s, experiment_id)
        if rate:
            withins = [self._queued(ticks, x, mean_ms)] * len(shares)
        agents = [
            self._agent(w, t, ticks[w][-1].actions if t else 0, withins[w], x, duration_s)
            for w, t in enumerate(shares)
        ]
        actions = sum(a.actions for a in agents)
        reads = sum(a.reads for a in agents)
        bad = sum(a.unpredictable_reads for a in agents)
        hits = sum(t.within for row in ticks for t in row)
        ended = sum(t.ended for row in ticks for t in row)
        result = ExperimentResult(
            experiment_id=experiment_id,
            threads=threads,
            duration_s=duration_s,
            elapsed_s=duration_s,
            store=self.describe(),
            actions=actions,
            sessions=actions,
            errors=0,
            actions_per_s=actions / duration_s,
            sessions_per_s=actions / duration_s,
            within_percent=100.0 * hits / ended if ended else 0.0,
            unpredictable_percent=100.0 * bad / reads if reads else 0.0,
            reads=reads,
            unpredictable_reads=bad,
            per_action=[],
            overall=self._summary(x, mean_ms, duration_s),
            agents=agents,
            passed=all(a.passed for a in agents),
        )
        result.target_rate = rate or 0.0
        if x <= 0:
            return result
        return rate_steady(result, ticks, self.sla, self.rating)


MODEL_STORE = "model"  # the store name that selects the model store


@dataclass
class ModelTarget:
    """The model store as a target: no agents, any T."""

    settings: Settings
    store_model: ModelStore
    record_fault: FaultRecorder | None = None  # never called: the model has no faults

    def run(
        self, threads: int, duration_s: float, experiment_id: str, rate: float | None = None
    ) -> ExperimentResult:
        result = self.store_model.experiment(threads, duration_s, experiment_id, rate)
        return count_sessions(result, self.settings)

    @property
    def store(self) -> str:
        return self.store_model.describe()

    def min_threads(self) -> int:
        return 1

    def max_threads(self) -> int:
        return self.settings.rating.max_threads or 1 << 30

    def fit_threads(self) -> int | None:
        return None

    def hosts(self) -> list[dict[str, Any]]:
        return [{"host": "virtual", "note": "model store: no agents"}]

    def versions(self) -> dict[str, str]:
        return target_versions(self.store)


class ModelKind:
    """`--store model`: nothing to load, nothing to check before it starts."""

    measures_a_store = False

    def resolve_layout(self, settings: Settings, threads: int | None) -> None:
        if settings.agents.processes == "auto":
            settings.agents.processes = 1

    def check_store(self, settings: Settings) -> None:
        return None

    def check_before_start(self, settings: Settings, threads: int | None = None) -> None:
        return None

    @contextmanager
    def bring_up(
        self, settings: Settings, work_dir: Path, say: Say, events: EventSink | None
    ) -> Iterator[ExperimentTarget]:
        s = settings
        yield ModelTarget(s, ModelStore(s.model, s.sla, s.rating, s.run.seed))
