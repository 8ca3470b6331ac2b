"""Staleness lag of an unpredictable read: how far in time it was from a state that
would have made it valid (the paper leaves this as future work).

The item's history is taken as its value after each write, applying writes at their
ends (delta writes accumulate, absolute writes replace). The lag of a read that
observed v is the distance between the read's interval and the nearest period
during which the item held v: for a stale read, how long before the read began v
stopped being current (the end of the latest write it missed). A value the item
never held has no lag ("never valid").
"""

import numpy as np

from bgbench.validation.logformat import NEVER, WRITE_ABS

MIN = np.iinfo(np.int64).min


def history(init: int, writes_by_end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(from, until, value) of each state of the item, in end order of its writes."""
    w = writes_by_end[writes_by_end["end"] != NEVER]  # unknown outcomes never define a state
    if len(w) and np.all(w["kind"] == WRITE_ABS):
        values = np.concatenate([[init], w["value"]])
    else:
        values = init + np.concatenate([[0], np.cumsum(w["value"])])
    starts = np.concatenate([[MIN], w["end"]])
    untils = np.concatenate([w["end"], [np.iinfo(np.int64).max]])
    return starts, untils, values


def lag_ns(
    observed: int, read_start: int, read_end: int, init: int, writes: np.ndarray
) -> int | None:
    """Distance in ns between the read and the nearest state holding `observed`, or None."""
    starts, untils, values = history(init, writes)
    held = np.flatnonzero(values == observed)
    if len(held) == 0:
        return None
    best = None
    for k in held.tolist():
        s, u = int(starts[k]), int(untils[k])
        if u <= read_start:
            gap = read_start - u  # stale: v stopped being current before the read began
        elif s >= read_end:
            gap = s - read_end  # from the future: v became current only after the read ended
        else:
            gap = 0
        best = gap if best is None else min(best, gap)
    return best
