"""What the runs of one experiment (a T at a duration) say together: the outcome the search
sees, with its throughput interval and whether its SLA verdict is clear.

A verdict is clear when each SLA criterion's interval lies on one side of its threshold:
the share within beta (a t interval over the steady window's samples) against alpha, the
unpredictable reads (Wilson's interval) against tau. One clear failure decides; a
criterion whose interval straddles its threshold leaves the verdict uncertain, and the
rating runs that T again (up to rating.repeats) and pools the runs. A run that never
settled is run again too, and left out of the pool. A run too short for an interval of
its share within beta (a 1 s search experiment) is judged whole, its verdict clear. Errors
and a saturated client are failures whatever the intervals.
"""

from dataclasses import dataclass, field
from typing import Any

from bgbench.coordinator.configuration.config import RatingConfig, SLAConfig
from bgbench.coordinator.records.stats import pooled_interval, proportion_interval
from bgbench.coordinator.search.memo import Outcome
from bgbench.run_result import ExperimentResult

SOFT = ("latency:", "staleness:")  # reasons an interval can leave uncertain
UNSTABLE = "unstable:"  # a run that never settled: run again, rated on the runs that did


@dataclass
class RunFigures:
    """One run's figures, from a result or from its record."""

    passed: bool
    throughput: float
    within: float
    reads: int
    unpredictable: int
    reasons: str
    hard: bool  # failed for a reason no interval can soften
    unstable: bool  # never settled (coordinator/execution/steady.py)
    rate_samples: list[float] = field(default_factory=list)
    within_samples: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, result: ExperimentResult) -> "RunFigures":
        steady = result.steady
        return cls(
            result.passed,
            result.actions_per_s,
            result.within_percent,
            result.reads,
            result.unpredictable_reads,
            reasons_of(result),
            _hard([r for a in result.agents for r in a.reasons]),
            any(r.startswith(UNSTABLE) for a in result.agents for r in a.reasons),
            steady.window_throughput if steady and steady.tested else [],
            steady.window_within if steady and steady.tested else [],
        )

    @classmethod
    def of_record(cls, data: dict[str, Any]) -> "RunFigures":
        """From a recorded result (its JSON)."""
        steady = data.get("steady") or {}
        cut = steady.get("cut", 0)
        tested = steady.get("tested", False)
        return cls(
            data["passed"],
            data["actions_per_s"],
            data["within_percent"],
            data["reads"],
            data["unpredictable_reads"],
            "; ".join(f"{a['address']}: {r}" for a in data.get("agents", []) for r in a["reasons"]),
            _hard([r for a in data.get("agents", []) for r in a["reasons"]]),
            any(r.startswith(UNSTABLE) for a in data.get("agents", []) for r in a["reasons"]),
            steady.get("throughput", [])[cut:] if tested else [],
            [w for w in steady.get("within", [])[cut:] if w is not None] if tested else [],
        )


def _hard(reasons: list[str]) -> bool:
    return any(not r.startswith((*SOFT, UNSTABLE)) for r in reasons)


def reasons_of(result: ExperimentResult) -> str:
    return result.reasons()


def outcome_of(runs: list[RunFigures], sla: SLAConfig, rating: RatingConfig) -> Outcome:
    """The outcome of one or more runs of the same experiment. Runs that never settled
    are left out while one did; when none did, the outcome fails, unclear (so the
    experiment runs again, up to rating.repeats)."""
    conf = rating.confidence
    settled = [r for r in runs if not r.unstable]
    if not settled:
        last = runs[-1]
        return Outcome(False, last.throughput, last.reasons, clear=False, runs=len(runs))
    runs = settled
    rate = pooled_interval([r.rate_samples for r in runs], conf)
    throughput = sum(r.throughput for r in runs) / len(runs)
    samples = tuple(v for r in runs for v in r.rate_samples)
    reasons = "; ".join(r.reasons for r in runs if r.reasons)
    if any(r.hard for r in runs):
        return Outcome(False, throughput, reasons, rate.low, rate.high, samples, True, len(runs))
    reads = sum(r.reads for r in runs)
    stale = proportion_interval(sum(r.unpredictable for r in runs), reads, conf)
    passed, reasons = _verdict(runs, sla, stale.mean, reasons)
    clear = _clear(runs, sla, conf, stale, reads)
    return Outcome(passed, throughput, reasons, rate.low, rate.high, samples, clear, len(runs))


def _verdict(
    runs: list[RunFigures], sla: SLAConfig, stale_mean: float, reasons: str
) -> tuple[bool, str]:
    """One run's own verdict, or several runs' judged on their pooled figures."""
    if len(runs) == 1:
        return runs[0].passed, reasons
    within = sum(r.within for r in runs) / len(runs)
    passed = within >= sla.alpha and stale_mean <= sla.tau
    if not passed and not reasons:
        reasons = f"latency: {within:.2f}% within {sla.beta_ms:g} ms over {len(runs)} runs"
    return passed, reasons


def _clear(runs: list[RunFigures], sla: SLAConfig, conf: float, stale: Any, reads: int) -> bool:
    """Whether the intervals settle the verdict (else the experiment runs again)."""
    # No stale read at all leaves nothing to resolve: τ holds as well as the run can show.
    stale_reads = sum(r.unpredictable for r in runs)
    states = [_side(stale, sla.tau, higher_passes=False)] if reads and stale_reads else []
    if sla.latency_scope == "action":
        within_ci = pooled_interval([r.within_samples for r in runs], conf, ceiling=100.0)
        # Too short a run for an interval (steady.MIN_SAMPLES): it is judged whole, as its
        # verdict says; repeating it would give no interval either.
        if within_ci.n >= 2:
            states.append(_side(within_ci, sla.alpha, higher_passes=True))
    return "fail" in states or "unsure" not in states


def _side(interval: Any, threshold: float, higher_passes: bool) -> str:
    if interval.low > threshold or (interval.low == threshold and higher_passes):
        return "pass" if higher_passes else "fail"
    if interval.high < threshold or (interval.high == threshold and not higher_passes):
        return "fail" if higher_passes else "pass"
    return "unsure"
