"""The validator as it was before it was vectorised (one Python step per read that
overlaps a write, per unpredictable read, per lag), kept verbatim as the oracle of
test_validator_speedpath.py."""

from dataclasses import dataclass

import numpy as np

from bgbench.validation.checker import ValidationResult
from bgbench.validation.initial import InitialValues
from bgbench.validation.logformat import NEVER, READ, WRITE, WRITE_ABS

# -- the reference: the validator before vectorisation ------------------------------------


def reference_item_keys(records: np.ndarray) -> np.ndarray:
    return records["item_id"].astype(np.int64) * 256 + records["item"]


def reference_dense_ranks(keys: np.ndarray) -> np.ndarray:
    if len(keys) == 0:
        return keys.astype(np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    step = np.concatenate([[0], (sorted_keys[1:] != sorted_keys[:-1]).astype(np.int64)])
    dense = np.empty(len(keys), dtype=np.int64)
    dense[order] = np.cumsum(step)
    return dense


@dataclass
class ReferenceIndex:
    reads: np.ndarray
    writes: np.ndarray
    r_key: np.ndarray
    w_key: np.ndarray
    by_end: np.ndarray
    key_by_end: np.ndarray
    group_lo: np.ndarray
    ended: np.ndarray
    overlapping: np.ndarray
    w_s: np.ndarray
    w_e: np.ndarray
    r_s: np.ndarray
    r_e: np.ndarray
    times: np.ndarray
    by_start: np.ndarray
    start_sorted: np.ndarray
    longest: int
    open_writes: dict[int, np.ndarray]

    @classmethod
    def build(cls, reads: np.ndarray, writes: np.ndarray) -> "ReferenceIndex":
        all_keys = np.concatenate([reference_item_keys(reads), reference_item_keys(writes)])
        dense = reference_dense_ranks(all_keys)
        if len(dense) and dense.max() >= 1 << 31:
            raise ValueError("too many distinct items for one in-memory pass: split the logs")
        r_key = dense[: len(reads)]
        w_key = dense[len(reads) :]
        all_times = np.concatenate([reads["start"], reads["end"], writes["start"], writes["end"]])
        order = np.argsort(all_times, kind="stable")
        times = all_times[order]
        first = np.concatenate([[True], times[1:] != times[:-1]]) if len(times) else times
        ranks = np.empty(len(all_times), dtype=np.int64)
        ranks[order] = np.maximum.accumulate(np.where(first, np.arange(len(times)), 0))
        n_r, n_w = len(reads), len(writes)
        r_s, r_e = ranks[:n_r], ranks[n_r : 2 * n_r]
        w_s, w_e = ranks[2 * n_r : 2 * n_r + n_w], ranks[2 * n_r + n_w :]
        end_comp = (w_key << 32) | w_e
        by_end = np.argsort(end_comp, kind="stable")
        end_sorted = end_comp[by_end]
        start_comp = (w_key << 32) | w_s
        by_start = np.argsort(start_comp, kind="stable")
        start_sorted = start_comp[by_start]
        known = writes["end"] != NEVER
        longest = int((writes["end"][known] - writes["start"][known]).max(initial=0))
        open_writes = {
            int(k): np.flatnonzero((w_key == k) & ~known) for k in np.unique(w_key[~known])
        }
        n_items = int(max(r_key.max(initial=-1), w_key.max(initial=-1))) + 1
        run_start = np.concatenate([[0], np.cumsum(np.bincount(w_key, minlength=n_items))])
        group_lo = run_start[r_key]
        ended = np.searchsorted(end_sorted, (r_key << 32) | r_s)
        started = np.searchsorted(start_sorted, (r_key << 32) | r_e, side="right")
        started -= group_lo
        overlapping = started - (ended - group_lo)
        return cls(
            reads, writes, r_key, w_key, by_end, w_key[by_end], group_lo, ended, overlapping,
            w_s, w_e, r_s, r_e, times, by_start, start_sorted, longest, open_writes,
        )  # fmt: skip

    def overlapping_writes(self, i: int) -> np.ndarray:
        r = self.reads[i]
        key = self.r_key[i] << 32
        earliest = np.searchsorted(self.times, int(r["start"]) - self.longest)
        lo = np.searchsorted(self.start_sorted, key | earliest)
        hi = np.searchsorted(self.start_sorted, key | self.r_e[i], side="right")
        window = self.by_start[lo:hi]
        extra = self.open_writes.get(int(self.r_key[i]))
        if extra is not None:
            window = np.union1d(window, extra[self.w_s[extra] <= self.r_e[i]])
        w = self.writes[window]
        return w[(w["end"] >= r["start"]) & (w["start"] <= r["end"])]


def reference_valid_values_contain(observed, base, starts, ends, deltas) -> bool:
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
        else:
            sums = {0}
            for v in concurrent:
                sums |= {s + v for s in sums}
            if need in sums:
                return True
    return False


def reference_delta_mask(ix: ReferenceIndex, init: np.ndarray, which: np.ndarray) -> np.ndarray:
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
        bad[i] = not reference_valid_values_contain(
            int(observed[i]), int(base[i]),
            o["start"].tolist(), o["end"].tolist(), o["value"].tolist(),
        )  # fmt: skip
    return bad


def reference_absolute_mask(ix: ReferenceIndex, init: np.ndarray, which: np.ndarray) -> np.ndarray:
    bad = np.zeros(len(ix.reads), dtype=bool)
    if not which.any():
        return bad
    observed = ix.reads["value"]
    values_by_end = ix.writes["value"][ix.by_end]
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


MIN, MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def reference_lag_ns(ix: ReferenceIndex, i: int, init: int, absolute: bool) -> int | None:
    r = ix.reads[i]
    observed, rs, re_ = int(r["value"]), int(r["start"]), int(r["end"])
    lo = int(ix.group_lo[i])
    hi = int(np.searchsorted(ix.key_by_end, ix.r_key[i], side="right"))
    ends = ix.writes["end"][ix.by_end[lo:hi]]
    hi = lo + int(np.searchsorted(ends, NEVER))
    ends = ends[: hi - lo]
    values = ix.writes["value"][ix.by_end[lo:hi]]

    def state(p: np.ndarray) -> np.ndarray:
        if absolute:
            # The one change from the original: with no write of known outcome it indexed
            # an empty array (IndexError); the only state is then the initial value.
            held = values[np.maximum(p - 1, 0)] if len(values) else init
            return np.where(p == 0, init, held)
        cum = np.concatenate([[0], np.cumsum(values)])
        return init + cum[p]

    def since(p: int) -> int:
        return MIN if p == 0 else int(ends[p - 1])

    def until(p: int) -> int:
        return MAX if p == len(ends) else int(ends[p])

    current = int(ix.ended[i]) - lo
    best: int | None = None
    top, width = current + 1, 64
    while top > 0 and best is None:
        p = np.arange(max(0, top - width), top)
        hits = p[state(p) == observed]
        if len(hits):
            k = int(hits[-1])
            best = max(0, rs - until(k))
        top, width = top - width, width * 2
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


def reference_check(records: np.ndarray, initial: InitialValues):
    reads = records[records["kind"] == READ]
    writes = records[(records["kind"] == WRITE) | (records["kind"] == WRITE_ABS)]
    unknown = np.setdiff1d(np.unique(records["kind"]), [READ, WRITE, WRITE_ABS])
    if len(unknown):
        raise ValueError(f"unknown record kind {int(unknown[0])} in the log")
    init = initial.lookup(reads["item"], reads["item_id"])
    ix = ReferenceIndex.build(reads, writes)
    n_items = int(max(ix.r_key.max(initial=-1), ix.w_key.max(initial=-1))) + 1
    absolute_items = np.bincount(ix.w_key[writes["kind"] == WRITE_ABS], minlength=n_items) > 0
    delta_items = np.bincount(ix.w_key[writes["kind"] == WRITE], minlength=n_items) > 0
    mixed = np.flatnonzero(absolute_items & delta_items)
    if len(mixed):
        w = writes[ix.w_key == mixed[0]][0]
        raise ValueError(
            f"item kind {int(w['item'])} id {int(w['item_id'])} has both delta and absolute writes"
        )
    on_absolute = absolute_items[ix.r_key]
    bad = reference_delta_mask(ix, init, ~on_absolute) | reference_absolute_mask(
        ix, init, on_absolute
    )
    return reads, bad, ix


def reference_distinct(values: np.ndarray) -> np.ndarray:
    s = np.sort(values)
    return s[np.concatenate([[True], s[1:] != s[:-1]])] if len(s) else s


def reference_counts(values: np.ndarray) -> dict[int, int]:
    if len(values) == 0:
        return {}
    counts = np.bincount(values.astype(np.int64))
    return {k: int(c) for k, c in enumerate(counts.tolist()) if c}


def reference_validate(
    records: np.ndarray,
    initial: InitialValues,
    max_examples: int = 10,
    keep_sessions: bool = False,
    keep_reads: bool = False,
) -> ValidationResult:
    reads, bad, ix = reference_check(records, initial)
    result = ValidationResult(reads=len(reads), writes=len(ix.writes))
    if len(reads) == 0:
        if keep_sessions:
            result.session_ids = result.bad_session_ids = np.empty(0, np.int64)
        return result
    init = initial.lookup(reads["item"], reads["item_id"])
    result.unpredictable_reads = int(bad.sum())
    sessions = reference_distinct(reads["session"])
    bad_sessions = reference_distinct(reads["session"][bad])
    result.sessions, result.unpredictable_sessions = len(sessions), len(bad_sessions)
    if keep_sessions:
        result.session_ids, result.bad_session_ids = sessions, bad_sessions
    result.reads_by_item = reference_counts(reads["item"])
    result.unpredictable_by_item = reference_counts(reads["item"][bad])
    result.reads_by_action = reference_counts(reads["action"])
    result.unpredictable_by_action = reference_counts(reads["action"][bad])
    n = int(max(ix.r_key.max(initial=-1), ix.w_key.max(initial=-1))) + 1
    absolute_items = np.bincount(ix.w_key[ix.writes["kind"] == WRITE_ABS], minlength=n) > 0
    absolute = absolute_items[ix.r_key] if len(ix.writes) else np.zeros(len(reads), bool)
    for i in np.flatnonzero(bad).tolist():
        r = reads[i]
        lag = reference_lag_ns(ix, i, int(init[i]), bool(absolute[i]))
        if lag is None:
            result.never_valid += 1
        else:
            result.lags_ms.append(lag / 1e6)
        if len(result.examples) < max_examples or keep_reads:
            described = {
                "item": int(r["item"]),
                "item_id": int(r["item_id"]),
                "start": int(r["start"]),
                "end": int(r["end"]),
                "observed": int(r["value"]),
                "initial": int(init[i]),
                "action": int(r["action"]),
                "session": int(r["session"]),
                "thread": int(r["thread"]),
                "lag_ms": None if lag is None else lag / 1e6,
            }
            if len(result.examples) < max_examples:
                result.examples.append(described)
            if keep_reads:
                result.unpredictable.append(described)
    return result


def reference_item_partition(records: np.ndarray, parts: int) -> np.ndarray:
    keys = (records["item_id"].astype(np.uint64) << np.uint64(8)) | records["item"].astype(
        np.uint64
    )
    return ((keys * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) % np.uint64(parts)


def reference_validate_in_memory(
    records: np.ndarray, initial: InitialValues, parts: int, keep_reads: bool = False
) -> ValidationResult:
    """The runner's split into parts by item, each validated alone, counts merged."""
    if parts <= 1:
        return reference_validate(records, initial, keep_reads=keep_reads)
    owner = reference_item_partition(records, parts)
    results = [
        reference_validate(records[owner == p], initial, keep_sessions=True, keep_reads=keep_reads)
        for p in range(parts)
    ]
    result = ValidationResult()
    for r in results:
        result.merge(r)
    result.sessions = len(np.unique(np.concatenate([r.session_ids for r in results])))
    result.unpredictable_sessions = len(
        np.unique(np.concatenate([r.bad_session_ids for r in results]))
    )
    return result
