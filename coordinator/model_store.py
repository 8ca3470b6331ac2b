"""The model store (`--store model`): a simulated store whose behaviour is a formula of T.

It stands in for agents and a store at once, on a virtual clock (nothing sleeps),
so the rating search can be checked on SoARs from 500 to 10^8 actions/s in
seconds:

- throughput X(T): the paper's concave quadratic a*T - b*T^2 with its vertex worth
  `peak` at `peak_threads` (default sqrt(peak): the paper's b = 1), or a saturating
  `rate_at_one * sqrt(T)`;
- response time: lognormal with mean T / X(T) (Little's law, closed loop) and
  spread sigma, so the share within beta falls as T grows;
- unpredictable reads: `unpredictable_per_thread` percent per thread.
"""

import math
from dataclasses import dataclass

from bgbench.coordinator.config import ModelConfig, SLAConfig
from bgbench.coordinator.experiment import AgentOutcome, ExperimentResult
from bgbench.coordinator.metrics import LatencySummary, judge
from bgbench.coordinator.plan import split_threads

Z = {50: 0.0, 95: 1.6448536, 99: 2.3263479, 99.9: 3.0902323}
READ_SHARE = 0.9  # of actions that read a tracked item


def _normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


@dataclass
class ModelStore:
    model: ModelConfig
    sla: SLAConfig
    clock_s: float = 0.0  # virtual time spent in experiments

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

    def experiment(self, threads: int, duration_s: float, experiment_id: str) -> ExperimentResult:
        self.clock_s += duration_s
        x = self.throughput(threads)
        unpredictable = min(100.0, self.model.unpredictable_per_thread * threads)
        shares = split_threads(threads, [1.0] * self.model.workers)
        if x > 0:
            median, sigma = self._latency(threads, x)
            within = self._within(median, sigma)
            summary = LatencySummary(
                count=int(x * duration_s),
                p50_ms=median * math.exp(sigma * Z[50]),
                p95_ms=median * math.exp(sigma * Z[95]),
                p99_ms=median * math.exp(sigma * Z[99]),
                max_ms=median * math.exp(sigma * Z[99.9]),
                mean_ms=1000.0 * threads / x,
            )
        else:
            within, summary = 0.0, LatencySummary(0, 0, 0, 0, 0, 0)
        agents = []
        for w, t in enumerate(shares):
            x_w = x * t / threads if threads else 0.0
            actions = int(x_w * duration_s)
            reads = int(actions * READ_SHARE)
            out = AgentOutcome(
                address=f"model-worker-{w}",
                threads=t,
                actions=actions,
                sessions=actions,
                elapsed_s=duration_s,
                load_processes=1,
                within_percent=within if t else 100.0,
                session_within_percent=within if t else 100.0,
                reads=reads,
                unpredictable_reads=round(reads * unpredictable / 100),
                start_state="model",
            )
            verdict = judge(out.within_percent, out.unpredictable_percent, 0, False, self.sla)
            if t and x <= 0:
                verdict.passed = False
                verdict.reasons.append("throughput: the model store serves nothing at this T")
            out.passed, out.reasons = verdict.passed, verdict.reasons
            agents.append(out)
        actions = sum(a.actions for a in agents)
        reads = sum(a.reads for a in agents)
        bad = sum(a.unpredictable_reads for a in agents)
        return ExperimentResult(
            experiment_id=experiment_id,
            threads=threads,
            duration_s=duration_s,
            elapsed_s=duration_s,
            store=self.describe(),
            actions=actions,
            sessions=actions,
            errors=0,
            actions_per_s=x,
            sessions_per_s=x,
            within_percent=within,
            unpredictable_percent=100.0 * bad / reads if reads else 0.0,
            reads=reads,
            unpredictable_reads=bad,
            per_action=[],
            overall=summary,
            agents=agents,
            passed=all(a.passed for a in agents),
        )
