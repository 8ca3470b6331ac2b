"""Merged figures of an experiment: exact percentiles from pooled HDR histograms, SLA verdicts."""

from dataclasses import dataclass
from functools import cache

import numpy as np
from hdrh.histogram import HdrHistogram

from bgbench.coordinator.configuration.config import SLAConfig
from bgbench.protos import new_histogram


def decode(data: bytes) -> HdrHistogram:
    h = new_histogram()
    if data:
        h.add(HdrHistogram.decode(data))
    return h


@cache
def _bucket_values(counts_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lowest, highest and median equivalent value of every bucket (same for all our histograms)."""
    h = new_histogram()
    values = [h.get_value_from_index(i) for i in range(counts_len)]
    lowest = np.array([h.get_lowest_equivalent_value(v) for v in values], dtype=np.float64)
    highest = np.array([h.get_highest_equivalent_value(v) for v in values], dtype=np.float64)
    return lowest, highest, (lowest + highest) / 2


def _counts(h: HdrHistogram) -> np.ndarray:
    # hdrh's own iterators walk buckets in Python (about 1 s for a few histograms); the
    # counts array is a ctypes buffer numpy can read in place.
    return np.ctypeslib.as_array(h.counts)[: h.counts_len].astype(np.float64)


def share_within(h: HdrHistogram, bound_us: float) -> float:
    """Percent of recorded values at or below the bound (to the histogram's precision)."""
    total: int = h.get_total_count()
    if total == 0:
        return 100.0
    lowest, _, _ = _bucket_values(h.counts_len)
    return 100.0 * float(_counts(h)[lowest <= bound_us].sum()) / total


def percentile(h: HdrHistogram, percent: float) -> float:
    """Like HdrHistogram.get_value_at_percentile, vectorised."""
    total = h.get_total_count()
    if total == 0:
        return 0.0
    _, highest, _ = _bucket_values(h.counts_len)
    target = max(1, int(min(percent, 100.0) * total / 100 + 0.5))  # hdrh rounds the same way
    idx = int(np.searchsorted(np.cumsum(_counts(h)), target))
    return float(highest[min(idx, len(highest) - 1)])


def mean(h: HdrHistogram) -> float:
    total = h.get_total_count()
    if total == 0:
        return 0.0
    _, _, middle = _bucket_values(h.counts_len)
    return float((_counts(h) * middle).sum() / total)


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
            p50_ms=percentile(h, 50) / 1000,
            p95_ms=percentile(h, 95) / 1000,
            p99_ms=percentile(h, 99) / 1000,
            max_ms=h.get_max_value() / 1000,
            mean_ms=mean(h) / 1000,
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
        what = "actions" if sla.latency_scope == "action" else "sessions"
        reasons.append(
            f"latency: {within_percent:.2f}% of {what} within {sla.beta_ms:g} ms < {sla.alpha:g}%"
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


def distribution(h: HdrHistogram) -> tuple[np.ndarray, np.ndarray]:
    """The recorded values' distribution: each non-empty bucket's median value and its
    count (for plotting a histogram)."""
    if h.get_total_count() == 0:
        return np.zeros(0), np.zeros(0)
    _, _, middle = _bucket_values(h.counts_len)
    counts = _counts(h)
    used = counts > 0
    return middle[used], counts[used]
