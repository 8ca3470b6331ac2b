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

from dataclasses import dataclass, field

import numpy as np

from bgbench.validation.logformat import READ, WRITE


@dataclass(frozen=True)
class InitialValues:
    """Initial value of every tracked item: per item kind, sorted ids and their values."""

    by_kind: dict[int, tuple[np.ndarray, np.ndarray]]

    def lookup(self, kinds: np.ndarray, ids: np.ndarray) -> np.ndarray:
        out = np.empty(len(ids), dtype=np.int64)
        for kind in np.unique(kinds).tolist():
            mask = kinds == kind
            if kind not in self.by_kind:
                raise ValueError(f"no initial values for item kind {kind}")
            known_ids, values = self.by_kind[kind]
            pos = np.searchsorted(known_ids, ids[mask])
            pos_clipped = np.minimum(pos, len(known_ids) - 1)
            found = (pos < len(known_ids)) & (known_ids[pos_clipped] == ids[mask])
            if not found.all():
                missing = ids[mask][~found][0]
                raise ValueError(f"item kind {kind} id {missing} has no initial value")
            out[mask] = values[pos_clipped]
        return out


@dataclass
class ValidationResult:
    reads: int = 0
    unpredictable_reads: int = 0
    writes: int = 0
    sessions: int = 0  # sessions that read at least one tracked item
    unpredictable_sessions: int = 0
    reads_by_item: dict[int, int] = field(default_factory=dict)
    unpredictable_by_item: dict[int, int] = field(default_factory=dict)
    reads_by_action: dict[int, int] = field(default_factory=dict)
    unpredictable_by_action: dict[int, int] = field(default_factory=dict)
    examples: list[dict] = field(default_factory=list)  # a few unpredictable reads

    @property
    def unpredictable_percent(self) -> float:
        return 100.0 * self.unpredictable_reads / self.reads if self.reads else 0.0


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


def validate(
    records: np.ndarray, initial: InitialValues, max_examples: int = 10
) -> ValidationResult:
    """Count reads and sessions that no serial order of the overlapping writes explains."""
    reads = records[records["kind"] == READ]
    writes = records[records["kind"] == WRITE]
    result = ValidationResult(reads=len(reads), writes=len(writes))
    if len(reads) == 0:
        return result
    init = initial.lookup(reads["item"], reads["item_id"])
    bad = _unpredictable_mask(reads, writes, init)
    result.unpredictable_reads = int(bad.sum())
    result.sessions = len(np.unique(reads["session"]))
    result.unpredictable_sessions = len(np.unique(reads["session"][bad]))
    result.reads_by_item = _counts(reads["item"])
    result.unpredictable_by_item = _counts(reads["item"][bad])
    result.reads_by_action = _counts(reads["action"])
    result.unpredictable_by_action = _counts(reads["action"][bad])
    for i in np.flatnonzero(bad)[:max_examples].tolist():
        r = reads[i]
        result.examples.append(
            {
                "item": int(r["item"]),
                "item_id": int(r["item_id"]),
                "start": int(r["start"]),
                "end": int(r["end"]),
                "observed": int(r["value"]),
                "initial": int(init[i]),
                "action": int(r["action"]),
                "session": int(r["session"]),
            }
        )
    return result


def _counts(values: np.ndarray) -> dict[int, int]:
    keys, counts = np.unique(values, return_counts=True)
    return {int(k): int(c) for k, c in zip(keys.tolist(), counts.tolist(), strict=True)}


def _unpredictable_mask(reads: np.ndarray, writes: np.ndarray, init: np.ndarray) -> np.ndarray:
    observed = reads["value"]
    if len(writes) == 0:
        return observed != init
    # Dense item keys shared by reads and writes; times replaced by their ranks so an
    # (item, time) pair packs into one sortable int64.
    item_of = lambda recs: recs["item_id"] * 8 + recs["item"]  # noqa: E731
    keys, dense = np.unique(np.concatenate([item_of(reads), item_of(writes)]), return_inverse=True)
    if len(keys) >= 1 << 31:
        raise ValueError("too many distinct items for the in-memory validator")
    r_key, w_key = dense[: len(reads)].astype(np.int64), dense[len(reads) :].astype(np.int64)
    times = np.unique(
        np.concatenate([reads["start"], reads["end"], writes["start"], writes["end"]])
    )
    rank = lambda t: np.searchsorted(times, t).astype(np.int64)  # noqa: E731
    r_s, r_e = rank(reads["start"]), rank(reads["end"])
    w_s, w_e = rank(writes["start"]), rank(writes["end"])

    by_end = np.argsort((w_key << 32) | w_e, kind="stable")
    end_comp = ((w_key << 32) | w_e)[by_end]
    end_cum = np.concatenate([[0], np.cumsum(writes["value"][by_end])])
    start_comp = np.sort((w_key << 32) | w_s)

    group_lo = np.searchsorted(end_comp, r_key << 32)
    ended_hi = np.searchsorted(end_comp, (r_key << 32) | r_s)  # writes with end < r.s
    base = init + end_cum[ended_hi] - end_cum[group_lo]
    started = np.searchsorted(start_comp, (r_key << 32) | r_e, side="right") - np.searchsorted(
        start_comp, r_key << 32
    )
    overlapping = started - (ended_hi - group_lo)

    bad = (overlapping == 0) & (observed != base)
    slow = np.flatnonzero(overlapping > 0)
    if len(slow):
        order = np.argsort(w_key, kind="stable")
        sorted_keys = w_key[order]
        for i in slow.tolist():
            lo, hi = np.searchsorted(sorted_keys, [r_key[i], r_key[i] + 1])
            cand = writes[order[lo:hi]]
            mask = (cand["end"] >= reads["start"][i]) & (cand["start"] <= reads["end"][i])
            o = cand[mask]
            ok = valid_values_contain(
                int(observed[i]),
                int(base[i]),
                o["start"].tolist(),
                o["end"].tolist(),
                o["value"].tolist(),
            )
            bad[i] = not ok
    return bad
