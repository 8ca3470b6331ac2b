"""The statistics a rating decides with: intervals of means and proportions, and a test.

Samples of one experiment (its throughput each bin, its share within beta each live
interval) are autocorrelated, so a mean's interval comes from batch means: the samples
are cut into at most MAX_BATCHES consecutive batches whose means are nearly independent,
and a Student t interval is taken over them. Proportions counted over many events
(unpredictable reads among reads) use Wilson's score interval.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# The distributions' functions themselves (scipy.special's ufuncs): scipy.stats' wrappers
# around them cost about 2 ms a call, and a rating's steady-state tests make thousands of
# calls. Imported by the functions that call them (after the first, a dictionary lookup):
# scipy takes most of a second to import, which every command importing this module paid.

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


def within(interval: Interval, floor: float, ceiling: float) -> Interval:
    """An interval cut to the values its quantity can take (a rate is never below 0, a
    share never above 100%): a t interval of a few noisy batches can reach past them.
    An unbounded interval (too few samples to have one) stays unbounded."""
    if not (math.isfinite(interval.low) and math.isfinite(interval.high)):
        return interval
    low = min(max(interval.low, floor), ceiling)
    high = max(min(interval.high, ceiling), floor)
    return Interval(interval.mean, low, high, interval.n)


def mean_interval(
    samples: Sequence[float] | np.ndarray,
    confidence: float,
    floor: float = 0.0,
    ceiling: float = math.inf,
) -> Interval:
    """The mean of the samples and its t interval over batch means, within [floor,
    ceiling] (by default a rate's: never below 0). One sample (or none) cannot say how
    far the mean may be: its interval is unbounded."""
    x = np.asarray(samples, dtype=np.float64)
    if len(x) == 0:
        return Interval(0.0, -math.inf, math.inf, 0)
    m = float(x.mean())
    b = batch_means(x)
    if len(b) < 2:
        return Interval(m, -math.inf, math.inf, len(b))
    sd = float(b.std(ddof=1))
    half = t_quantile(0.5 + confidence / 2, len(b) - 1) * sd / math.sqrt(len(b))
    return within(Interval(m, m - half, m + half, len(b)), floor, ceiling)


def pooled_interval(
    runs: Sequence[Sequence[float]],
    confidence: float,
    floor: float = 0.0,
    ceiling: float = math.inf,
) -> Interval:
    """The mean over several runs of one experiment. One run: the t interval over its
    batch means. Several: a run's level differs from another's (the store's state, the
    machine) by more than its own samples vary, so the interval is the t interval over
    the runs' means (runs - 1 degrees of freedom), widened to hold the pooled batch
    means' interval when that is wider."""
    parts = [np.asarray(r, dtype=np.float64) for r in runs if len(r)]
    if not parts:
        return Interval(0.0, -math.inf, math.inf, 0)
    everything = np.concatenate(parts)
    if len(parts) == 1:
        return mean_interval(everything, confidence, floor, ceiling)
    pooled = np.concatenate([batch_means(p) for p in parts])
    m = float(np.mean([p.mean() for p in parts]))
    level = np.array([p.mean() for p in parts])
    between = t_half_width(level, confidence)
    inside = t_half_width(pooled, confidence)
    half = max(between, inside)
    return within(Interval(m, m - half, m + half, len(parts)), floor, ceiling)


def t_half_width(x: np.ndarray, confidence: float) -> float:
    """Half the t interval of the mean of x (infinite below two values)."""
    if len(x) < 2:
        return math.inf
    sd = float(x.std(ddof=1))
    return t_quantile(0.5 + confidence / 2, len(x) - 1) * sd / math.sqrt(len(x))


def proportion_interval(hits: int, total: int, confidence: float) -> Interval:
    """Wilson's score interval of hits/total, in percent."""
    if total <= 0:
        return Interval(0.0, 0.0, 100.0, 0)
    from scipy.special import ndtri  # type: ignore[import-untyped]

    z = float(ndtri(0.5 + confidence / 2))
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
    if welch_p_value(x, y) < 1 - confidence:
        return 1 if diff > 0 else -1
    return 0


def t_quantile(p: float, df: int) -> float:
    """Student's t distribution's p-quantile with df degrees of freedom."""
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def welch_p_value(x: np.ndarray, y: np.ndarray) -> float:
    """The two-sided p-value of Welch's t test (unequal variances) that x and y have one
    mean; scipy.stats.ttest_ind(x, y, equal_var=False).pvalue, computed directly."""
    vx, vy = float(x.var(ddof=1)) / len(x), float(y.var(ddof=1)) / len(y)
    se2 = vx + vy
    if se2 == 0:
        return 0.0 if float(x.mean()) != float(y.mean()) else 1.0
    t = (float(x.mean()) - float(y.mean())) / math.sqrt(se2)
    spread = vx * vx / (len(x) - 1) + vy * vy / (len(y) - 1)
    df = se2 * se2 / spread if spread > 0 else float(len(x) + len(y) - 2)  # underflowed
    from scipy.special import stdtr

    return float(2 * stdtr(df, -abs(t)))
