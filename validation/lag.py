"""Staleness lag of an unpredictable read: how far in time it was from a state that
would have made it valid (the paper leaves this as future work).

The item's history is its value after each write, applying writes at their ends in
end order (delta writes accumulate, absolute writes replace). The lag of a read that
observed v is the distance between the read's interval and the nearest period during
which the item held v: for a stale read, how long before the read began v stopped
being current (the end of the latest write it missed). A value the item never held
has no lag ("never valid"). The search walks outward from the read in growing
windows, so its cost follows the distance, not the item's whole history.
"""

import numpy as np

from bgbench.validation.index import WriteIndex
from bgbench.validation.logformat import NEVER

MIN, MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def lag_ns(ix: WriteIndex, i: int, init: int, absolute: bool) -> int | None:
    """Distance in ns between read i and the nearest state of its item holding its value."""
    r = ix.reads[i]
    observed, rs, re_ = int(r["value"]), int(r["start"]), int(r["end"])
    lo = int(ix.group_lo[i])
    hi = int(np.searchsorted(ix.key_by_end, ix.r_key[i], side="right"))
    ends = ix.writes["end"][ix.by_end[lo:hi]]
    hi = lo + int(np.searchsorted(ends, NEVER))  # writes of unknown outcome define no state
    ends = ends[: hi - lo]
    values = ix.writes["value"][ix.by_end[lo:hi]]

    def state(p: np.ndarray) -> np.ndarray:
        """Value held from the end of write p-1 to the end of write p (p counted from lo)."""
        if absolute:
            return np.where(p == 0, init, values[np.maximum(p - 1, 0)])
        cum = np.concatenate([[0], np.cumsum(values)])  # small: one item's writes
        return init + cum[p]

    def since(p: int) -> int:
        return MIN if p == 0 else int(ends[p - 1])

    def until(p: int) -> int:
        return MAX if p == len(ends) else int(ends[p])

    current = int(ix.ended[i]) - lo  # the state holding when the read began
    best: int | None = None
    # backward: states that held before the read began
    top, width = current + 1, 64
    while top > 0 and best is None:
        p = np.arange(max(0, top - width), top)
        hits = p[state(p) == observed]
        if len(hits):
            k = int(hits[-1])
            best = max(0, rs - until(k))
        top, width = top - width, width * 2
    # forward: states that began after the read began (a read of the future)
    bottom, width = current + 1, 64
    while bottom <= len(ends):
        p = np.arange(bottom, min(len(ends) + 1, bottom + width))
        if best is not None and since(int(p[0])) - re_ >= best:
            break
        hits = p[state(p) == observed]
        if len(hits):
            gap = max(0, since(int(hits[0])) - re_)
            best = gap if best is None else min(best, gap)
            break
        bottom, width = bottom + width, width * 2
    return best
