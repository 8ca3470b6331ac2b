"""Synthetic read/write logs with known staleness, for validation benchmarks and tests.

Operations land uniformly on a timeline with exponential durations; items are
chosen with BG's Zipfian. Each write takes effect at the midpoint of its interval (a
linearizable store), each read observes its item's value at its own midpoint,
except a chosen share of reads that observe the value from `stale_ms` earlier.
Half of the items take delta writes (+1/-1), the other half absolute writes.
"""

import numpy as np

from bgbench.validation.initial import InitialValues
from bgbench.validation.logformat import READ, RECORD_DTYPE, WRITE, WRITE_ABS

DELTA_KIND, ABSOLUTE_KIND = 0, 1


def synthetic_logs(
    n: int,
    items: int = 100_000,
    write_share: float = 0.1,
    stale_share: float = 0.001,
    stale_ms: float = 50.0,
    seed: int = 1,
    rate_per_s: float = 20_000.0,
    mean_duration_ms: float = 2.0,
    theta: float = 0.27,
) -> tuple[np.ndarray, InitialValues]:
    """n records at `rate_per_s` (so the timeline grows with n, as a longer experiment's
    does), items drawn with BG's Zipfian (rank i weighs i^-(1-theta))."""
    rng = np.random.default_rng(seed)
    rec = np.zeros(n, dtype=RECORD_DTYPE)
    span_s = n / rate_per_s
    weights = np.arange(1, items + 1, dtype=np.float64) ** -(1.0 - theta)
    cdf = np.cumsum(weights / weights.sum())
    item_id = np.minimum(np.searchsorted(cdf, rng.random(n)), items - 1)
    kind = (item_id % 2).astype(np.uint8)  # even ids: delta items; odd: absolute items
    start = np.sort(rng.integers(0, int(span_s * 1e9), n))
    duration = rng.exponential(mean_duration_ms * 1e6, n).astype(np.int64) + 1
    is_write = rng.random(n) < write_share
    rec["item"], rec["item_id"], rec["start"], rec["end"] = kind, item_id, start, start + duration
    rec["thread"] = rng.integers(0, 64, n)
    rec["session"] = np.arange(n) // 3
    rec["action"] = np.where(is_write, 3, 0)
    delta = np.where(rng.random(n) < 0.5, 1, -1)
    absolute_value = rng.integers(0, 1000, n)
    rec["kind"] = np.where(is_write, np.where(kind == DELTA_KIND, WRITE, WRITE_ABS), READ)
    rec["value"] = np.where(kind == DELTA_KIND, delta, absolute_value)

    # The value every read sees: its item's value at its midpoint (or stale_ms earlier).
    mid = start + duration // 2
    key = item_id.astype(np.int64)
    initial_value = (key * 7) % 50
    writes = np.flatnonzero(is_write)
    order = writes[np.lexsort((mid[writes], key[writes]))]
    w_key, w_mid = key[order], mid[order]
    w_val = rec["value"][order]
    # running value per item in time order: cumsum of deltas restarted per item, or last value
    group_start = np.flatnonzero(np.concatenate([[True], w_key[1:] != w_key[:-1]]))
    cum = np.cumsum(np.where(kind[order] == DELTA_KIND, w_val, 0))
    base = np.repeat(cum[group_start] - np.where(kind[order] == DELTA_KIND, w_val, 0)[group_start],
                     np.diff(np.concatenate([group_start, [len(order)]])))  # fmt: skip
    delta_running = initial_value[w_key] + cum - base
    running = np.where(kind[order] == DELTA_KIND, delta_running, w_val)

    reads = np.flatnonzero(~is_write)
    stale = rng.random(len(reads)) < stale_share
    at = mid[reads] - np.where(stale, int(stale_ms * 1e6), 0)
    comp_writes = (w_key << 40) | (w_mid >> 10)  # 40 bits of ~us time, key above
    comp_reads = (key[reads] << 40) | (np.maximum(at, 0) >> 10)
    pos = np.searchsorted(comp_writes, comp_reads, side="right") - 1
    same = (pos >= 0) & (w_key[np.maximum(pos, 0)] == key[reads])
    rec["value"][reads] = np.where(same, running[np.maximum(pos, 0)], initial_value[key[reads]])

    ids = np.arange(items, dtype=np.int64)
    initial = InitialValues(
        {
            DELTA_KIND: (ids[ids % 2 == 0], initial_value[ids[ids % 2 == 0]]),
            ABSOLUTE_KIND: (ids[ids % 2 == 1], initial_value[ids[ids % 2 == 1]]),
        }
    )
    return rec, initial
