"""Exact check of reads against absolute writes (each write logs the new value).

With F and O as for delta writes, a read is valid iff it observes the value of a
write that can be the last of some possible prefix, or the value before all
overlapping writes. Every overlapping write w can be last: the prefix holding w
and the overlapping writes that ended before w started is possible, and no write
of F can follow w (F ended before the read began, w did not). A write of F can be
last only if no other write of F started after it ended; with F empty the prior
value is the initial one. So the valid values are
    {value(w) : w in O}  U  {value(w) : w in F, no a in F with a.s > w.e}  (or initial).
"""

import numpy as np

from bgbench.validation.index import WriteIndex


def absolute_mask(ix: WriteIndex, init: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Unpredictable flags for the reads selected by `which` (their items take absolute writes)."""
    bad = np.zeros(len(ix.reads), dtype=bool)
    if not which.any():
        return bad
    observed = ix.reads["value"]
    values_by_end = ix.writes["value"][ix.by_end]
    # The latest start among F, per read: a running max over (item, start) in end order.
    start_comp = (ix.key_by_end << 32) | ix.w_s[ix.by_end]
    running = np.maximum.accumulate(start_comp) if len(start_comp) else start_comp
    has_before = ix.ended > ix.group_lo
    last = np.maximum(ix.ended - 1, 0)
    latest_start = (
        np.where(has_before, running[last] & 0xFFFFFFFF, -1)
        if len(running)
        else (np.full(len(ix.reads), -1))
    )
    end_rank_by_end = ix.w_e[ix.by_end]
    # F writes that can be last: those in F ending at or after F's latest start.
    first_last_candidate = np.searchsorted(
        (ix.key_by_end << 32) | end_rank_by_end, (ix.r_key << 32) | np.maximum(latest_start, 0)
    )
    candidates = np.where(has_before, ix.ended - np.maximum(first_last_candidate, ix.group_lo), 0)
    prior = np.where(has_before, values_by_end[last] if len(values_by_end) else 0, init)
    quick = which & (ix.overlapping == 0) & (candidates <= 1)
    bad[quick] = observed[quick] != prior[quick]
    first_candidate = np.maximum(first_last_candidate, ix.group_lo)
    for i in np.flatnonzero(which & ~quick).tolist():
        valid = set(ix.overlapping_writes(i)["value"].tolist())
        if has_before[i]:
            valid |= set(values_by_end[first_candidate[i] : ix.ended[i]].tolist())
        else:
            valid.add(int(init[i]))
        bad[i] = int(observed[i]) not in valid
    return bad
