"""Exact check of reads against delta writes (DESIGN.md "Unpredictable data").

For a read r of item x over [r.s, r.e]: F are the writes of x that ended before
r.s, O the writes of x that overlap r. A subset S of O is a possible prefix iff no
write a outside S ended before a write b inside S started (a.e < b.s). The valid
values are initial(x) + sum(F) + sum(S) over possible prefixes S.

Enumerating prefixes is exponential; we do not. If S is non-empty, let b be a
member of S with the latest start M = b.s. Then S is a prefix iff it holds every
write of O that ended before M (they precede b), b itself, and any subset of the
writes of O other than b that started at or before M and did not end before M
(they are concurrent with b; a write starting after M cannot be in S). So the
valid values are base, plus for every b in O:
    base + sum{a.d : a.e < b.s} + b.d + (any subset sum of the concurrent ones),
which is O(|O|^2) per read, and a range when the concurrent deltas are all +1/-1.

Reads with no overlapping write (the common case) are resolved vectorised.
"""

import numpy as np

from bgbench.validation.index import WriteIndex


def valid_values_contain(
    observed: int, base: int, starts: list[int], ends: list[int], deltas: list[int]
) -> bool:
    """Is `observed` reachable from base by some possible prefix of the overlapping writes?"""
    if observed == base:
        return True
    n = len(deltas)
    for b in range(n):
        m = starts[b]
        before = 0
        concurrent: list[int] = []
        for a in range(n):
            if a == b:
                continue
            if ends[a] < m:
                before += deltas[a]
            elif starts[a] <= m:
                concurrent.append(deltas[a])
        need = observed - (base + before + deltas[b])
        if all(d in (1, -1) for d in concurrent):
            pos = sum(1 for d in concurrent if d == 1)
            if -(len(concurrent) - pos) <= need <= pos:
                return True
        elif need in _subset_sums(concurrent):
            return True
    return False


def _subset_sums(values: list[int]) -> set[int]:
    sums = {0}
    for v in values:
        sums |= {s + v for s in sums}
    return sums


def delta_mask(ix: WriteIndex, init: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Unpredictable flags for the reads selected by `which` (their items take delta writes)."""
    bad = np.zeros(len(ix.reads), dtype=bool)
    if not which.any():
        return bad
    cum = np.concatenate([[0], np.cumsum(ix.writes["value"][ix.by_end])])
    base = init + cum[ix.ended] - cum[ix.group_lo]
    observed = ix.reads["value"]
    quick = which & (ix.overlapping == 0)
    bad[quick] = observed[quick] != base[quick]
    for i in np.flatnonzero(which & (ix.overlapping > 0)).tolist():
        o = ix.overlapping_writes(i)
        bad[i] = not valid_values_contain(
            int(observed[i]),
            int(base[i]),
            o["start"].tolist(),
            o["end"].tolist(),
            o["value"].tolist(),
        )
    return bad


def states(init: int, writes_by_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The item's value after each write, applying writes at their ends: (from times, values)."""
    values = init + np.concatenate([[0], np.cumsum(writes_by_end["value"])])
    times = np.concatenate([[np.iinfo(np.int64).min], writes_by_end["end"]])
    return times, values
