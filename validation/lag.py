"""Staleness lag of an unpredictable read: how far in time it was from a state that
would have made it valid (the paper leaves this as future work).

The item's history is its value after each write, applying writes at their ends in
end order (delta writes accumulate, absolute writes replace); writes of unknown outcome
define no state. State p (0 <= p <= K, K writes of known outcome) holds from the end of
write p-1 to the end of write p; state c, c = |F|, held when the read began. The lag of a
read that observed v is the distance between the read's interval and the nearest period
during which the item held v: the latest state p <= c holding v gives read start - end of
write p (how long before the read began v stopped being current; 0 if v still held), the
earliest state p > c holding v gives end of write p-1 - read end (a read of the future);
the lag is the smaller. A value the item never held has no lag ("never valid").

All unpredictable reads are placed at once: the states of their items are sorted by
(item, value, p), and two searches per read find the latest p <= c and earliest p > c.
"""

import numpy as np

from bgbench.validation.index import WriteIndex, expand

_PACKED = 1 << 62  # (item, value, state) keys must stay below this


def lags_ns(
    ix: WriteIndex, sel: np.ndarray, init: np.ndarray, observed: np.ndarray, absolute: np.ndarray
) -> list[int | None]:
    """Lag in ns (None: never valid) of each read in sel (index order); init, observed and
    absolute (its item takes absolute writes) are given per read of sel."""
    if len(sel) == 0:
        return []
    rows = ix.r_row[sel]
    rs, re_ = ix.records["start"][rows], ix.records["end"][rows]
    item = ix.r_item[sel]
    lo = ix.group_lo[sel]
    known = ix.known_count[item]
    current = ix.ended[sel] - lo
    ends = ix.records["end"][ix.write_pos[ix.by_end]]
    values = ix.values_by_end
    uniq, local = np.unique(item, return_inverse=True)
    if ix.items.kind is not None and ix.times.t0 is not None:
        # one initial value per item (always, unless items were numbered by sorting)
        first = np.zeros(len(uniq), dtype=np.int64)
        first[local] = np.arange(len(sel))
        done = _vectorised(
            ix.run_start[uniq], ix.known_count[uniq], init[first], absolute[first],
            local, current, observed, rs, re_, lo, known, ends, values,
        )  # fmt: skip
        if done is not None:
            return done
    return [
        _one(int(rs[j]), int(re_[j]), int(current[j]), int(observed[j]),
             _states(int(init[j]), bool(absolute[j]), values[lo[j] : lo[j] + known[j]]),
             ends[lo[j] : lo[j] + known[j]])
        for j in range(len(sel))
    ]  # fmt: skip


def _states(init: int, absolute: bool, values: np.ndarray) -> np.ndarray:
    if absolute:
        return np.concatenate([[init], values]).astype(np.int64)
    return init + np.concatenate([[0], np.cumsum(values)])


def _one(
    rs: int, re_: int, current: int, observed: int, states: np.ndarray, ends: np.ndarray
) -> int | None:
    """One read's lag with Python's integers (times of any range)."""
    hits = np.flatnonzero(states == observed)
    back, ahead = hits[hits <= current], hits[hits > current]
    best: int | None = None
    if len(back):
        p = int(back[-1])
        best = 0 if p == len(ends) else max(0, rs - int(ends[p]))
    if len(ahead):
        gap = max(0, int(ends[int(ahead[0]) - 1]) - re_)
        best = gap if best is None else min(best, gap)
    return best


def _vectorised(
    item_lo: np.ndarray, item_known: np.ndarray, item_init: np.ndarray,
    item_absolute: np.ndarray, local: np.ndarray, current: np.ndarray, observed: np.ndarray,
    rs: np.ndarray, re_: np.ndarray, lo: np.ndarray, known: np.ndarray, ends: np.ndarray,
    values: np.ndarray,
) -> list[int | None] | None:  # fmt: skip
    """Every read's lag at once; None when the keys would not fit (then one at a time)."""
    il, p = expand(np.zeros(len(item_lo), np.int64), item_known + 1)
    at = item_lo[il] + p
    if len(values):
        cum = np.concatenate([[0], np.cumsum(values)])
        summed = item_init[il] + (cum[at] - cum[item_lo[il]])
        replaced = np.where(p == 0, item_init[il], values[np.maximum(at - 1, 0)])
        state = np.where(item_absolute[il], replaced, summed)
    else:
        state = item_init[il]
    held = np.unique(np.concatenate([state, observed]))
    span = int(item_known.max()) + 1  # p runs over 0..K
    if len(item_lo) * len(held) * span >= _PACKED:
        return None
    keys = np.sort((il * len(held) + np.searchsorted(held, state)) * span + p)
    group = local * len(held) + np.searchsorted(held, observed)
    after = np.searchsorted(keys, group * span + current, side="right")
    back = keys[np.maximum(after - 1, 0)]
    has_back = (after > 0) & (back // span == group)
    ahead = keys[np.minimum(after, len(keys) - 1)]
    has_ahead = (after < len(keys)) & (ahead // span == group)
    pb, pf = back % span, ahead % span
    # state K holds for ever: a read still seeing it is not behind
    stopped = ends[np.minimum(lo + pb, max(len(ends) - 1, 0))] if len(ends) else rs
    behind = np.where(pb == known, 0, np.maximum(0, rs - stopped))
    began = ends[np.maximum(lo + pf - 1, 0)] if len(ends) else re_
    early = np.maximum(0, began - re_)
    lag = np.where(has_ahead, early, behind)
    lag = np.where(has_back & has_ahead, np.minimum(behind, early), lag)
    has = (has_back | has_ahead).tolist()
    return [v if h else None for v, h in zip(lag.tolist(), has, strict=True)]
