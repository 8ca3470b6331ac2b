"""HDR latency histograms as the run result carries them: exact merges, percentiles.

Every histogram is built alike (protos.new_histogram), so merging encoded ones, from
load processes, agents or stored records, gives what recording every value in one
would have given.
"""

from dataclasses import dataclass
from functools import cache

import numpy as np
from hdrh.histogram import HdrHistogram

from bgbench.protos import new_histogram


def decode(data: bytes) -> HdrHistogram:
    h = new_histogram()
    if data:
        h.add(HdrHistogram.decode(data))
    return h


def merged(parts: list[bytes]) -> bytes:
    """Encoded histograms merged into one (b"" when none is given)."""
    present = [p for p in parts if p]
    if not present:
        return b""
    total = HdrHistogram.decode(present[0])
    for part in present[1:]:
        total.add(HdrHistogram.decode(part))
    return total.encode()  # type: ignore[no-any-return]


def merged_or_empty(parts: list[bytes]) -> bytes:
    """Like merged, but an empty histogram rather than nothing."""
    return merged(parts) or new_histogram().encode()


@cache
def _bucket_values(counts_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lowest, highest and median equivalent value of every bucket (same for all our histograms)."""
    h = new_histogram()
    values = [h.get_value_from_index(i) for i in range(counts_len)]
    lowest = np.array([h.get_lowest_equivalent_value(v) for v in values], dtype=np.float64)
    highest = np.array([h.get_highest_equivalent_value(v) for v in values], dtype=np.float64)
    return lowest, highest, (lowest + highest) / 2


def counts_of(h: HdrHistogram) -> np.ndarray:
    # hdrh's own iterators walk buckets in Python (about 1 s for a few histograms); the
    # counts array is a ctypes buffer numpy can read in place.
    return np.ctypeslib.as_array(h.counts)[: h.counts_len].astype(np.float64)


def share_within(h: HdrHistogram, bound_us: float) -> float:
    """Percent of recorded values at or below the bound (to the histogram's precision)."""
    total: int = h.get_total_count()
    if total == 0:
        return 100.0
    lowest, _, _ = _bucket_values(h.counts_len)
    return 100.0 * float(counts_of(h)[lowest <= bound_us].sum()) / total


def percentile(h: HdrHistogram, percent: float) -> float:
    """Like HdrHistogram.get_value_at_percentile, vectorised."""
    total = h.get_total_count()
    if total == 0:
        return 0.0
    _, highest, _ = _bucket_values(h.counts_len)
    target = max(1, int(min(percent, 100.0) * total / 100 + 0.5))  # hdrh rounds the same way
    idx = int(np.searchsorted(np.cumsum(counts_of(h)), target))
    return float(highest[min(idx, len(highest) - 1)])


def mean(h: HdrHistogram) -> float:
    total = h.get_total_count()
    if total == 0:
        return 0.0
    _, _, middle = _bucket_values(h.counts_len)
    return float((counts_of(h) * middle).sum() / total)


def medians(counts_len: int) -> np.ndarray:
    """Each bucket's median value."""
    return _bucket_values(counts_len)[2]


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

    @classmethod
    def empty(cls) -> "LatencySummary":
        return cls(0, 0, 0, 0, 0, 0)
