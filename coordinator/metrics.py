"""Merged figures of an experiment: exact percentiles from pooled HDR histograms, SLA verdicts."""

from dataclasses import dataclass

from hdrh.histogram import HdrHistogram

from bgbench.coordinator.config import SLAConfig

HIST_LOWEST_US = 1
HIST_HIGHEST_US = 3_600_000_000
HIST_DIGITS = 3


def new_histogram() -> HdrHistogram:
    return HdrHistogram(HIST_LOWEST_US, HIST_HIGHEST_US, HIST_DIGITS)


def decode(data: bytes) -> HdrHistogram:
    h = new_histogram()
    if data:
        h.add(HdrHistogram.decode(data))
    return h


def share_within(h: HdrHistogram, bound_us: float) -> float:
    """Percent of recorded values at or below the bound (to the histogram's precision)."""
    total = h.get_total_count()
    if total == 0:
        return 100.0
    within = sum(
        it.count_at_value_iterated_to
        for it in h.get_recorded_iterator()
        if h.get_lowest_equivalent_value(it.value_iterated_to) <= bound_us
    )
    return 100.0 * within / total


@dataclass
class LatencySummary:
    count: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float

    @classmethod
    def of(cls, h: HdrHistogram) -> "LatencySummary":
        if h.get_total_count() == 0:
            return cls(0, 0, 0, 0, 0, 0)
        return cls(
            count=h.get_total_count(),
            p50_ms=h.get_value_at_percentile(50) / 1000,
            p95_ms=h.get_value_at_percentile(95) / 1000,
            p99_ms=h.get_value_at_percentile(99) / 1000,
            max_ms=h.get_max_value() / 1000,
            mean_ms=h.get_mean_value() / 1000,
        )


@dataclass
class Verdict:
    passed: bool
    reasons: list[str]


def judge(
    within_percent: float,
    unpredictable_percent: float,
    errors: int,
    saturated: bool,
    sla: SLAConfig,
) -> Verdict:
    """One worker's verdict (paper section G): latency and staleness, plus honest failures."""
    reasons = []
    if within_percent < sla.alpha:
        reasons.append(
            f"latency: {within_percent:.2f}% of actions within {sla.beta_ms:g} ms < {sla.alpha:g}%"
        )
    if unpredictable_percent > sla.tau:
        reasons.append(
            f"staleness: {unpredictable_percent:.3f}% unpredictable reads > {sla.tau:g}%"
        )
    if errors:
        reasons.append(f"errors: {errors} actions failed")
    if saturated:
        reasons.append("saturated client: a load process used its whole core")
    return Verdict(not reasons, reasons)
