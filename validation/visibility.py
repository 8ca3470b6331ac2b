"""Visibility of every acknowledged write: how long after its end reads still missed it.

For an acknowledged write W (known outcome) of item x, a read r of x that started after W
ended *includes* W if the value it returned is the value of some state of x in which W is
applied, the states being the validator's: possible prefixes (no write outside the prefix
ended before a write inside it started) of the writes of x that started before r ended
(those that ended before r began and any subset of the concurrent ones). Unlike the
validator, the prefix need not hold every write that ended before r began: a read that saw
an older state still includes the writes of that state. W's visibility time is 0 if every
read of x that started after W's end includes it, else the start of the latest such read
that missed it minus W's end; W is never visible if that read is the latest read of x in
the log. A write no read of x started after is unread: it has no visibility time.

A read the validator found valid includes every write that ended before it began (each
valid state applies them all), so only unpredictable reads are examined, each against the
writes of its item that started before it ended: the work is the sum of those counts,
done in bounded chunks of (read, write) pairs.

Absolute writes: a state holding W has the value of a write L that can be applied last
after W, i.e. L did not end before W started. So r (value v) includes W iff some write of
x with value v that started before r ended ended at or after W's start.

Delta writes: take b, a write of the prefix with the latest start. The prefix holds every
write that ended before b started, b, and any subset of the writes concurrent with b
(started at or before b, not ended before b started), as in delta.py; W is in it if it
ended before b started, is b, or is a chosen concurrent one. With +1/-1 concurrents the
values for one b form a range, so whether r includes W is a few comparisons per (r, b)
pair; items with other deltas go to subset sums in Python.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bgbench.validation.index import WriteIndex, expand

PAIRS_PER_CHUNK = 1 << 21  # (read, write) pairs held at once
_NONE = np.iinfo(np.int64).min

Key = tuple[int, int]  # (action, item kind) of the writes


@dataclass
class Visibility:
    """Per (action, item kind) of the acknowledged writes."""

    times_ns: dict[Key, np.ndarray] = field(default_factory=dict)  # writes some later read saw
    never: dict[Key, int] = field(default_factory=dict)  # the latest read of the item missed it
    unread: dict[Key, int] = field(default_factory=dict)  # no read of the item started after it
    writes: dict[Key, int] = field(default_factory=dict)  # acknowledged writes

    def merge(self, other: "Visibility") -> None:
        for key, times in other.times_ns.items():
            mine = self.times_ns.get(key)
            self.times_ns[key] = times if mine is None else np.concatenate([mine, times])
        for name in ("never", "unread", "writes"):
            total, part = getattr(self, name), getattr(other, name)
            for key, n in part.items():
                total[key] = total.get(key, 0) + n

    @property
    def never_total(self) -> int:
        return sum(self.never.values())

    def rows(self, actions: dict[int, str], items: dict[int, str]) -> list[dict[str, Any]]:
        """Per (action, item kind), by name, as `bgbench validate --json` gives them: the
        visibility times' exact percentiles in ms (None when no write was seen)."""
        out = []
        for (a, i), n in sorted(self.writes.items()):
            times = self.times_ns.get((a, i), np.empty(0, np.int64)) / 1e6
            visible: dict[str, Any] = {"count": len(times)}
            for name, q in (("p50_ms", 50), ("p95_ms", 95), ("p99_ms", 99), ("max_ms", 100)):
                visible[name] = float(np.percentile(times, q)) if len(times) else None
            out.append({
                "action": actions.get(a, str(a)), "item": items.get(i, str(i)), "writes": n,
                "never": self.never.get((a, i), 0), "unread": self.unread.get((a, i), 0),
                "visible": visible,
            })  # fmt: skip
        return out

    def all_times_ns(self) -> np.ndarray:
        parts = list(self.times_ns.values())
        return np.concatenate(parts) if parts else np.empty(0, np.int64)


def visibility(
    ix: WriteIndex, init: np.ndarray, bad: np.ndarray, absolute_items: np.ndarray
) -> Visibility:
    """Visibility of the log's acknowledged writes; init (each read's initial value) and bad
    (unpredictable) per read in index order, absolute_items per item, as checker.check
    gives them."""
    records = ix.records
    w_rows = ix.write_pos
    latest_miss = np.full(len(w_rows), _NONE, dtype=np.int64)
    sel = np.flatnonzero(bad)
    if len(sel):
        observed = records["value"][ix.r_row[sel]]
        read_start = records["start"][ix.r_row[sel]]
        on_absolute = absolute_items[ix.r_item[sel]]
        odd = _items_with_odd_deltas(ix) & ~absolute_items
        in_python = odd[ix.r_item[sel]]
        per_write = _DeltaFacts.of(ix)
        for absolute in (True, False):  # the two kinds' pairs are judged apart
            fast = np.flatnonzero(~in_python & (on_absolute == absolute))
            for part in _chunks(ix, sel[fast]):
                j = fast[part]
                _misses(ix, per_write, sel[j], observed[j], init[sel[j]], read_start[j],
                        absolute, latest_miss)  # fmt: skip
        for j in np.flatnonzero(in_python).tolist():
            _misses_in_python(ix, int(sel[j]), int(observed[j]), int(init[sel[j]]),
                              int(read_start[j]), latest_miss)  # fmt: skip
    return _tally(ix, latest_miss)


@dataclass
class _DeltaFacts:
    """Per write (log order), for delta items: init + before + d, the lowest and highest
    value the prefixes whose latest-started write it is can reach are then
    init + base - neg and init + base + pos (when its concurrent writes are all +1/-1)."""

    base: np.ndarray  # sum of the item's writes that ended before it started, plus its own
    pos: np.ndarray  # +1 writes concurrent with it
    neg: np.ndarray  # -1 writes concurrent with it
    # its item's writes that start within [its start, its end]: [s_pos, e_pos) in start order
    s_pos: np.ndarray
    e_pos: np.ndarray

    @classmethod
    def of(cls, ix: WriteIndex) -> "_DeltaFacts":
        d = ix.w_value
        key = (ix.w_item << ix.bits) | ix.w_s
        ended = np.searchsorted(ix.end_key, key)  # a.e < b.s
        started = np.searchsorted(ix.start_key, key, side="right")  # a.s <= b.s
        lo = ix.run_start[ix.w_item]

        def ended_before(x: np.ndarray) -> np.ndarray:
            c = np.concatenate([[0], np.cumsum(x[ix.by_end])])
            out: np.ndarray = c[ended] - c[lo]
            return out

        def started_by(x: np.ndarray) -> np.ndarray:
            c = np.concatenate([[0], np.cumsum(x[ix.by_start])])
            out: np.ndarray = c[started] - c[lo]
            return out

        plus, minus = (d == 1).astype(np.int64), (d == -1).astype(np.int64)
        pos = started_by(plus) - ended_before(plus) - plus
        neg = started_by(minus) - ended_before(minus) - minus
        e_pos = np.searchsorted(ix.start_key, (ix.w_item << ix.bits) | ix.w_e, side="right")
        return cls(ended_before(d) + d, pos, neg, np.searchsorted(ix.start_key, key), e_pos)


def _items_with_odd_deltas(ix: WriteIndex) -> np.ndarray:
    d = ix.w_value
    return np.bincount(ix.w_item[(d != 1) & (d != -1)], minlength=ix.items.count) > 0


def _candidates(ix: WriteIndex, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per read of sel: its item's writes that started before it ended, [lo, hi) in start
    order."""
    item = ix.r_item[sel]
    hi = np.searchsorted(ix.start_key, (item << ix.bits) | ix.r_e[sel], side="right")
    return ix.run_start[item], hi


def _chunks(ix: WriteIndex, sel: np.ndarray) -> Iterator[np.ndarray]:
    """Positions into sel, in runs of about PAIRS_PER_CHUNK (read, write) pairs."""
    lo, hi = _candidates(ix, sel)
    total = np.cumsum(hi - lo)
    first = 0
    while first < len(sel):
        before = total[first] - (hi - lo)[first]
        upto = int(np.searchsorted(total, before + PAIRS_PER_CHUNK, side="right"))
        last = max(first + 1, min(upto, len(sel)))
        yield np.arange(first, last)
        first = last


def _misses(
    ix: WriteIndex, facts: _DeltaFacts, sel: np.ndarray, observed: np.ndarray,
    init: np.ndarray, read_start: np.ndarray, absolute: bool, latest_miss: np.ndarray,
) -> None:  # fmt: skip
    """Record, per write, the latest start of the reads of sel (all of absolute items, or
    all of delta items) that missed it."""
    lo, hi = _candidates(ix, sel)
    k, p = expand(lo, hi)
    if len(k) == 0:
        return
    b = ix.by_start[p]
    ws, we, v = ix.w_s[b], ix.w_e[b], observed[k]
    seg = np.concatenate([[0], np.cumsum(hi - lo)])
    if absolute:  # the latest end among the candidates that wrote the value read
        latest_end = _segment_max(np.where(ix.w_value[b] == v, we, -1), seg)
        included = ws <= latest_end[k]
    else:  # the value read lies in b's range (A), or in it with one concurrent +1 or -1
        # forced in (P, M)
        low = init[k] + facts.base[b] - facts.neg[b]
        high = init[k] + facts.base[b] + facts.pos[b]
        in_a = (v >= low) & (v <= high)
        latest_a = _segment_max(np.where(in_a, ws, -1), seg)
        included = in_a | (we < latest_a[k])
        d = ix.w_value[b]
        for sign, fits in ((1, (v > low) & (v <= high)), (-1, (v >= low) & (v < high))):
            asked = np.flatnonzero((d == sign) & ~included)
            concurrent = _starts_within(k, b, lo, seg, hi, facts, fits, asked) - fits[asked]
            included[asked] |= concurrent > 0
    missed = ix.known[b] & (we < ix.r_s[sel][k]) & ~included
    np.maximum.at(latest_miss, b[missed], read_start[k[missed]])


def _segment_max(x: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Per segment [seg[i], seg[i+1]) of x: its maximum (-1 when empty)."""
    out = np.full(len(seg) - 1, -1, dtype=np.int64)
    full = np.flatnonzero(seg[1:] > seg[:-1])
    if len(full):
        out[full] = np.maximum.reduceat(x, seg[full])
    return out


def _starts_within(
    k: np.ndarray, b: np.ndarray, lo: np.ndarray, seg: np.ndarray, hi: np.ndarray,
    facts: _DeltaFacts, fits: np.ndarray, asked: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Per pair of `asked` (positions into the pairs (k, b)): how many pairs of the same read
    with `fits` start within [b.s, b.e]. A read's pairs are its item's writes [lo, hi) in
    start order, so those are the pairs [s_pos, min(e_pos, hi)) of b: a difference of running
    counts, linear in the pairs (a sort of the pairs was not: a store whose reads are nearly
    all stale gives every read thousands of pairs)."""
    counted = np.concatenate([[0], np.cumsum(fits)])
    k, b = k[asked], b[asked]
    at = seg[k] - lo[k]  # pair index of read k's write in start position q: at + q
    last = np.minimum(facts.e_pos[b], hi[k])
    count: np.ndarray = counted[at + last] - counted[at + facts.s_pos[b]]
    return count


def _misses_in_python(
    ix: WriteIndex, j: int, observed: int, init: int, read_start: int, latest_miss: np.ndarray
) -> None:
    """One read of an item with deltas other than +1/-1: subset sums, as delta.py does."""
    lo, hi = _candidates(ix, np.array([j]))
    cand = ix.by_start[int(lo[0]) : int(hi[0])].tolist()
    s, e, d = ix.w_s.tolist(), ix.w_e.tolist(), ix.w_value.tolist()
    included: set[int] = set()
    for b in cand:
        m = s[b]
        before = sum(d[a] for a in cand if e[a] < m)
        concurrent = [a for a in cand if a != b and s[a] <= m <= e[a]]
        need = observed - init - before - d[b]
        if need in _subset_sums([d[a] for a in concurrent]):
            included.update(a for a in cand if e[a] < m)
            included.add(b)
        for w in concurrent:
            rest = [d[a] for a in concurrent if a != w]
            if w not in included and need - d[w] in _subset_sums(rest):
                included.add(w)
    rs = int(ix.r_s[j])
    for w in cand:
        if ix.known[w] and e[w] < rs and w not in included:
            latest_miss[w] = max(int(latest_miss[w]), read_start)


def _subset_sums(values: list[int]) -> set[int]:
    sums = {0}
    for v in values:
        sums |= {s + v for s in sums}
    return sums


def _tally(ix: WriteIndex, latest_miss: np.ndarray) -> Visibility:
    records = ix.records
    out = Visibility()
    rows = ix.write_pos[ix.known]
    if len(rows) == 0:
        return out
    # the latest read start of each item (reads are grouped by item in index order)
    last_read = np.full(ix.items.count, _NONE, dtype=np.int64)
    starts = records["start"][ix.r_row]
    if len(starts):
        first = np.flatnonzero(np.concatenate([[True], ix.r_item[1:] != ix.r_item[:-1]]))
        last_read[ix.r_item[first]] = np.maximum.reduceat(starts, first)
    end = records["end"][rows]
    miss = latest_miss[ix.known]
    latest = last_read[ix.w_item[ix.known]]
    read_after = latest > end
    never = read_after & (miss != _NONE) & (miss >= latest)
    seen = read_after & ~never
    times = np.maximum(miss, end) - end  # a miss is always later than the write's end
    action, kind = records["action"][rows].astype(np.int64), records["item"][rows].astype(np.int64)
    group = (action << 8) | kind
    for g in np.unique(group).tolist():
        mine = group == g
        key = (g >> 8, g & 0xFF)
        out.writes[key] = int(np.count_nonzero(mine))
        out.times_ns[key] = times[mine & seen]
        out.never[key] = int(np.count_nonzero(mine & never))
        out.unread[key] = int(np.count_nonzero(mine & ~read_after))
    return out
