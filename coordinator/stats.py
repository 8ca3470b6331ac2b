"""The statistics a rating decides with: intervals of means and proportions, and a test.

Samples of one experiment (its throughput each bin, its share within beta each live
interval) are autocorrelated, so a mean's interval comes from batch means: the samples
are cut into at most MAX_BATCHES consecutive batches whose means are nearly independent,
and a Student t interval is taken over them. Proportions counted over many events
(unpredictable reads among reads) use Wilson's score interval.
"""

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps  # type: ignore[import-untyped]

MAX_BATCHES = 10


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int  # batches (or samples) the interval rests on

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high

    def overlaps(self, other: "Interval") -> bool:
        return self.low <= other.high and other.low <= self.high


def batch_means(samples: Sequence[float] | np.ndarray, batches: int = MAX_BATCHES) -> np.ndarray:
    """The means of up to `batches` consecutive, (nearly) equal batches of the samples."""
    x = np.asarray(samples, dtype=np.float64)
    if len(x) <= batches:
        return x
    return np.array([b.mean() for b in np.array_split(x, batches)])


def mean_interval(samples: Sequence[float] | np.ndarray, confidence: float) -> Interval:
    """The mean of the samples and its t interval over batch means. One sample (or none)
    cannot say how far the mean may be: its interval is unbounded."""
    x = np.asarray(samples, dtype=np.float64)
    if len(x) == 0:
        return Interval(0.0, -math.inf, math.inf, 0)
    m = float(x.mean())
    b = batch_means(x)
    if len(b) < 2:
        return Interval(m, -math.inf, math.inf, len(b))
    sd = float(b.std(ddof=1))
    half = float(sps.t.ppf(0.5 + confidence / 2, len(b) - 1)) * sd / math.sqrt(len(b))
    return Interval(m, m - half, m + half, len(b))


def pooled_interval(runs: Sequence[Sequence[float]], confidence: float) -> Interval:
    """The mean over several runs of one experiment. Each run gives its own batch means
    (a run's level differs from another's: the store's state, the machine), and the
    interval is a t interval over all of them."""
    means = [bm for run in runs if len(run) for bm in batch_means(run)]
    parts = [np.asarray(r, dtype=np.float64) for r in runs if len(r)]
    everything = np.concatenate(parts) if parts else np.zeros(0)
    if not len(everything):
        return Interval(0.0, -math.inf, math.inf, 0)
    m = float(everything.mean())
    if len(means) < 2:
        return Interval(m, -math.inf, math.inf, len(means))
    b = np.asarray(means)
    sd = float(b.std(ddof=1))
    half = float(sps.t.ppf(0.5 + confidence / 2, len(b) - 1)) * sd / math.sqrt(len(b))
    return Interval(m, m - half, m + half, len(b))


def proportion_interval(hits: int, total: int, confidence: float) -> Interval:
    """Wilson's score interval of hits/total, in percent."""
    if total <= 0:
        return Interval(0.0, 0.0, 100.0, 0)
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    p = hits / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return Interval(100 * p, 100 * max(0.0, centre - half), 100 * min(1.0, centre + half), total)


Samples = Sequence[float] | np.ndarray


def compare(a: Samples, b: Samples, confidence: float) -> int:
    """Welch's t test on two experiments' batch means: 1 if a's mean is higher, -1 if it
    is lower, 0 when the samples cannot tell them apart at `confidence`."""
    x, y = batch_means(a), batch_means(b)
    if len(x) < 2 or len(y) < 2:
        return 0
    vx, vy = float(x.var(ddof=1)), float(y.var(ddof=1))
    diff = float(x.mean() - y.mean())
    if vx == 0 and vy == 0:
        return (diff > 0) - (diff < 0)
    with warnings.catch_warnings():  # nearly equal samples: scipy warns, the p-value stands
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(sps.ttest_ind(x, y, equal_var=False).pvalue)
    if p < 1 - confidence:
        return 1 if diff > 0 else -1
    return 0
