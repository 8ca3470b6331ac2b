"""Exact check of reads against absolute writes (each write logs the new value).

With F and O as for delta writes, a read is valid iff it observes the value of a
write that can be the last of some possible prefix, or the value before all
overlapping writes. Every overlapping write w can be last: the prefix holding w
and the overlapping writes that ended before w started is possible, and no write
of F can follow w (F ended before the read began, w did not). A write of F can be
last only if no other write of F started after it ended; with F empty the prior
value is the initial one. So the valid values are
    {value(w) : w in O}  U  {value(w) : w in F, no a in F with a.s > w.e}  (or initial).

The writes of F that can be last are those ending at or after F's latest start: a suffix of
F in end order. When O is empty and that suffix is one write (the common case), the read
must see that write's value, or the initial value when F is empty. The other reads are
checked by expanding their O and their suffix of F into (read, write) pairs.
"""

import numpy as np

from bgbench.validation.index import WriteIndex, expand


def absolute_mask(
    ix: WriteIndex, init: np.ndarray, observed: np.ndarray, which: np.ndarray
) -> np.ndarray:
    """Unpredictable flags (index order) for the reads selected by `which` (their items take
    absolute writes); init and observed are per read in index order."""
    if not which.any():
        return np.zeros(len(observed), dtype=bool)
    if len(ix.w_item) == 0:
        unchanged: np.ndarray = which & (observed != init)
        return unchanged
    bits = ix.bits
    mask = (1 << bits) - 1
    values_by_end = ix.values_by_end
    has_before = ix.ended > ix.group_lo
    last = np.maximum(ix.ended - 1, 0)
    prior = np.where(has_before, values_by_end[last], init)
    # The latest start among F, per read: a running max over (item, start) in end order.
    running = np.maximum.accumulate((ix.w_item[ix.by_end] << bits) | ix.w_s[ix.by_end])
    latest_start = running[last] & mask
    # F's writes that can be last number two or more iff the one before its last can be.
    second = ix.ended - 2
    two = (second >= ix.group_lo) & ((ix.end_key[np.maximum(second, 0)] & mask) >= latest_start)
    quick = ~ix.overlaps & ~(has_before & two)
    bad: np.ndarray = which & quick & (observed != prior)
    sel = np.flatnonzero(which & ~quick)
    if len(sel):
        first = np.searchsorted(ix.end_key, (ix.r_item[sel] << bits) | latest_start[sel])
        first = np.maximum(first, ix.group_lo[sel])
        bad[sel] = ~_seen(ix, sel, observed[sel], init[sel], has_before[sel], first)
    return bad


def _seen(
    ix: WriteIndex,
    sel: np.ndarray,
    observed: np.ndarray,
    init: np.ndarray,
    has_before: np.ndarray,
    first: np.ndarray,
) -> np.ndarray:
    """Did each read of sel observe a value of O, of F's last candidates, or (F empty) init?"""
    n = len(sel)
    k, w = ix.overlapping_pairs(sel)
    seen = np.bincount(k[ix.w_value[w] == observed[k]], minlength=n) > 0
    k, p = expand(np.where(has_before, first, 0), np.where(has_before, ix.ended[sel], 0))
    seen |= np.bincount(k[ix.values_by_end[p] == observed[k]], minlength=n) > 0
    valid: np.ndarray = seen | (~has_before & (init == observed))
    return valid
