"""Exact check of reads against delta writes (docs/architecture.md, "Unpredictable data").

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
and a range when the concurrent deltas are all +1/-1.

Reads with no overlapping write (the common case) are resolved by one comparison each. For
the others every (read, b) pair is handled at once: the sums and counts over a.e < b.s and
a.s <= b.s come from prefix sums over the read's overlapping writes sorted by end and by
start. Only a read none of whose b has +1/-1 concurrents that reach its value, and some b
with other concurrent deltas, goes to the subset sums in Python (valid_values_contain).
"""

import numpy as np

from bgbench.validation.index import WriteIndex

# Sums of deltas stay exact in int64 (as Python's integers are) when bounded by this.
_EXACT = 1 << 62


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


def delta_mask(
    ix: WriteIndex, init: np.ndarray, observed: np.ndarray, which: np.ndarray
) -> np.ndarray:
    """Unpredictable flags (index order) for the reads selected by `which` (their items take
    delta writes); init and observed are per read in index order."""
    if not which.any():
        return np.zeros(len(observed), dtype=bool)
    cum = np.concatenate([[0], np.cumsum(ix.values_by_end)])
    base = init + cum[ix.ended] - cum[ix.group_lo]
    bad: np.ndarray = which & (observed != base)
    sel = np.flatnonzero(bad & ix.overlaps)
    if len(sel):
        bad[sel] = ~_reachable(ix, sel, observed[sel], base[sel])
    return bad


def _reachable(
    ix: WriteIndex, sel: np.ndarray, observed: np.ndarray, base: np.ndarray
) -> np.ndarray:
    """For reads sel (observed != base): does some possible prefix of O give `observed`?"""
    n = len(sel)
    k, w = ix.overlapping_pairs(sel)
    order = np.argsort(k, kind="stable")
    k, w = k[order], w[order]
    s, e, d = ix.w_s[w], ix.w_e[w], ix.w_value[w]
    size = np.bincount(k, minlength=n)
    seg = np.concatenate([[0], np.cumsum(size)])
    if _may_wrap(d, size, observed, base):
        return _in_python(np.arange(n), seg, s, e, d, observed, base)
    # (read, time) keys, times ranked among these writes' own times
    times = np.sort(np.concatenate([s, e]))
    tb = max(1, len(times).bit_length())
    s_key = (k << tb) | np.searchsorted(times, s)
    e_key = (k << tb) | np.searchsorted(times, e)
    by_e = np.argsort(e_key, kind="stable")
    by_s = np.argsort(s_key, kind="stable")
    ended = np.searchsorted(e_key[by_e], s_key)  # a.e < b.s (same read)
    started = np.searchsorted(s_key[by_s], s_key, side="right")  # a.s <= b.s
    lo = seg[k]

    def among(x: np.ndarray, order: np.ndarray, upto: np.ndarray) -> np.ndarray:
        """Per pair (read, b): sum of x over the read's writes before `upto` in `order`."""
        c = np.concatenate([[0], np.cumsum(x[order])])
        sums: np.ndarray = c[upto] - c[lo]
        return sums

    plus, minus = (d == 1).astype(np.int64), (d == -1).astype(np.int64)
    other = 1 - plus - minus
    before = among(d, by_e, ended)
    pos = among(plus, by_s, started) - among(plus, by_e, ended) - plus
    neg = among(minus, by_s, started) - among(minus, by_e, ended) - minus
    odd = among(other, by_s, started) - among(other, by_e, ended) - other
    need = observed[k] - (base[k] + before + d)
    ok = (odd == 0) & (need >= -neg) & (need <= pos)
    reached: np.ndarray = np.bincount(k[ok], minlength=n) > 0
    unsure = np.flatnonzero(~reached & (np.bincount(k[odd > 0], minlength=n) > 0))
    if len(unsure):
        reached[unsure] = _in_python(unsure, seg, s, e, d, observed, base)
    return reached


def _may_wrap(d: np.ndarray, size: np.ndarray, observed: np.ndarray, base: np.ndarray) -> bool:
    def largest(x: np.ndarray) -> int:
        return max(abs(int(x.min())), abs(int(x.max()))) if len(x) else 0

    bound = (largest(d) + 1) * (int(size.max(initial=0)) + 1) + largest(observed) + largest(base)
    return bound >= _EXACT


def _in_python(
    reads: np.ndarray,
    seg: np.ndarray,
    s: np.ndarray,
    e: np.ndarray,
    d: np.ndarray,
    observed: np.ndarray,
    base: np.ndarray,
) -> np.ndarray:
    """valid_values_contain for each of `reads`; writes grouped per read by `seg`. Time codes
    stand for times: the check only compares them."""
    out = np.zeros(len(reads), dtype=bool)
    for j, r in enumerate(reads.tolist()):
        lo, hi = seg[r], seg[r + 1]
        out[j] = valid_values_contain(
            int(observed[r]), int(base[r]),
            s[lo:hi].tolist(), e[lo:hi].tolist(), d[lo:hi].tolist(),
        )  # fmt: skip
    return out
