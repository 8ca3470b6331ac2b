"""Vectorised histogram figures agree with hdrh's own, and merging is exact."""

import numpy as np
import pytest

from bgbench.coordinator.records.metrics import (
    LatencySummary,
    mean,
    new_histogram,
    percentile,
    share_within,
)


def histogram(values):
    h = new_histogram()
    for v in values:
        h.record_value(int(v))
    return h


@pytest.mark.parametrize("seed", range(5))
def test_percentiles_match_hdrh(seed):
    rng = np.random.default_rng(seed)
    values = rng.lognormal(7, 1.5, 5000).clip(1, 3e9)
    h = histogram(values)
    for p in (0.1, 50, 95, 99, 99.9, 100):
        assert percentile(h, p) == h.get_value_at_percentile(p)
    assert mean(h) == pytest.approx(h.get_mean_value(), rel=1e-3)


def test_share_within_counts_values_at_or_below_the_bound():
    h = histogram([10] * 90 + [200_000] * 10)
    assert share_within(h, 100_000) == 90.0
    assert share_within(h, 200_000) == 100.0
    assert share_within(new_histogram(), 1) == 100.0


def test_merged_percentiles_equal_pooled_samples():
    rng = np.random.default_rng(3)
    a, b = rng.integers(1, 50_000, 3000), rng.integers(20_000, 400_000, 1000)
    merged = histogram(a)
    merged.add(histogram(b))
    pooled = np.sort(np.concatenate([a, b]))
    exact_p95 = pooled[int(np.ceil(0.95 * len(pooled))) - 1]
    assert percentile(merged, 95) == pytest.approx(exact_p95, rel=1e-3)  # 3 significant digits
    s = LatencySummary.of(merged)
    assert s.count == 4000 and s.p50_ms <= s.p95_ms <= s.p99_ms <= s.max_ms
