"""The vectorised validator gives bit-for-bit the results of the original per-read one.

`reference_*` below is the validator as it was before it was vectorised (one Python step per
read that overlaps a write, per unpredictable read, per lag), kept verbatim as the oracle.
Random small logs (delta and absolute items, writes of unknown outcome, overlapping writes,
reads of items never written, sessions, very wide time ranges and huge item ids that take
the fallback paths) must give identical counts, flags, lags, examples and per-read lists, in
one pass and split into parts as the runner splits them.
"""

from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgbench.validation import runner
from bgbench.validation.checker import ValidationResult, validate
from bgbench.validation.initial import InitialValues
from bgbench.validation.logformat import NEVER, READ, RECORD_DTYPE, WRITE, WRITE_ABS
from bgbench.validation.runner import item_partition, validate_in_memory
from bgbench.validation.synthetic import synthetic_logs

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


# -- comparing ------------------------------------------------------------------------------


def snapshot(result: ValidationResult) -> dict:
    """Every field, dicts with their key order, floats exactly, arrays as lists."""
    out = {}
    for name in ValidationResult.__dataclass_fields__:
        value = getattr(result, name)
        if isinstance(value, np.ndarray):
            value = (str(value.dtype), value.tolist())
        elif isinstance(value, dict):
            value = list(value.items())
        out[name] = value
    out["lags_bits"] = [float(x).hex() for x in result.lags_ms]
    return out


def outcome(fn, *args, **kwargs):
    """The result's snapshot, or the error's type and message."""
    try:
        return ("ok", snapshot(fn(*args, **kwargs)))
    except ValueError as exc:
        return ("error", type(exc).__name__, str(exc))


# -- random logs ----------------------------------------------------------------------------


@dataclass
class Log:
    records: np.ndarray
    initial: InitialValues
    rows: list = field(default_factory=list)


@st.composite
def logs(draw, wide: bool = False) -> Log:
    """A few items, each with delta or absolute writes (or none), overlapping writes,
    writes of unknown outcome, and reads whose observed values are sometimes right."""
    scale = draw(st.sampled_from([1, 1, 1_000, 1_000_000]))
    offset = draw(st.sampled_from([0, 10**12, -(10**9)]))
    huge_ids = draw(st.booleans()) if wide else False
    n_items = draw(st.integers(1, 5))
    rows, inits = [], {}
    for k in range(n_items):
        kind = draw(st.integers(0, 2))
        item_id = draw(st.integers(0, 6)) + (k * 7 if not huge_ids else 0)
        if huge_ids:
            item_id = draw(st.sampled_from([0, 3, 1 << 56, -(1 << 57), (1 << 62) + 5]))
        if (kind, item_id) in inits:
            continue
        init = draw(st.integers(-3, 3))
        inits[(kind, item_id)] = init
        mode = draw(st.sampled_from(["delta", "delta", "absolute", "absolute", "none"]))
        values = (
            st.sampled_from([-1, 1]) if draw(st.booleans()) else st.integers(-3, 4)
        ) if mode == "delta" else st.integers(0, 6)  # fmt: skip
        for _ in range(draw(st.integers(0, 8)) if mode != "none" else 0):
            s = draw(st.integers(0, 40))
            e = NEVER if draw(st.integers(0, 9)) == 0 else s + draw(st.integers(0, 12))
            wkind = WRITE if mode == "delta" else WRITE_ABS
            rows.append((wkind, kind, item_id, s, e, draw(values)))
        for _ in range(draw(st.integers(0, 8))):
            s = draw(st.integers(0, 45))
            e = s + draw(st.integers(0, 12))
            rows.append((READ, kind, item_id, s, e, init + draw(st.integers(-3, 4))))
    if wide and draw(st.booleans()):  # a time range too wide to pack with the item keys
        rows.append((READ, *next(iter(inits)), (1 << 61) // scale, (1 << 61) // scale, 0))
    order = draw(st.permutations(range(len(rows))))
    out = np.zeros(len(rows), dtype=RECORD_DTYPE)
    for pos, i in enumerate(order):
        kind_, item, item_id, s, e, v = rows[i]
        out[pos] = (
            kind_, item, draw(st.integers(0, 4)), draw(st.integers(0, 3)), item_id,
            s * scale + offset, e if e == NEVER else e * scale + offset, v,
            draw(st.integers(0, 6)),
        )  # fmt: skip
    by_kind: dict[int, tuple[list, list]] = {}
    for (kind, item_id), v in sorted(inits.items()):
        by_kind.setdefault(kind, ([], []))
        by_kind[kind][0].append(item_id)
        by_kind[kind][1].append(v)
    initial = InitialValues(
        {k: (np.array(ids, np.int64), np.array(vs, np.int64)) for k, (ids, vs) in by_kind.items()}
    )
    return Log(out, initial, rows)


SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(logs(), st.integers(0, 3), st.booleans(), st.booleans())
@pytest.mark.slow
def test_one_pass_matches_the_reference(log, max_examples, keep_sessions, keep_reads):
    kwargs = dict(max_examples=max_examples, keep_sessions=keep_sessions, keep_reads=keep_reads)
    assert outcome(validate, log.records, log.initial, **kwargs) == outcome(
        reference_validate, log.records, log.initial, **kwargs
    )


@SETTINGS
@given(logs(wide=True))
@pytest.mark.slow
def test_huge_ids_and_wide_time_ranges_match_the_reference(log):
    kwargs = dict(keep_sessions=True, keep_reads=True)
    assert outcome(validate, log.records, log.initial, **kwargs) == outcome(
        reference_validate, log.records, log.initial, **kwargs
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs(), parts=st.integers(1, 4))
def test_parts_match_the_reference(log, parts):
    part_records = max(1, -(-len(log.records) // parts))
    expected = outcome(
        reference_validate_in_memory, log.records, log.initial,
        -(-len(log.records) // part_records), keep_reads=True,
    )  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "PART_RECORDS", part_records)
        assert outcome(validate_in_memory, log.records, log.initial, 1, True) == expected


@pytest.mark.parametrize("force", ["python subset sums", "one lag at a time"])
def test_fallback_paths_match_the_reference(force, monkeypatch):
    from bgbench.validation import delta, lag

    if force == "python subset sums":
        monkeypatch.setattr(delta, "_EXACT", 1)  # every overlapped delta read in Python
    else:
        monkeypatch.setattr(lag, "_PACKED", 1)  # every lag by the scalar path
    records, initial = synthetic_logs(20_000, items=500, stale_share=0.05, seed=7)
    records["value"][(records["kind"] == WRITE) & (np.arange(len(records)) % 7 == 0)] = 3
    kwargs = dict(keep_sessions=True, keep_reads=True)
    expected = snapshot(reference_validate(records, initial, **kwargs))
    assert expected["unpredictable_reads"] > 10 and expected["lags_ms"]
    assert snapshot(validate(records, initial, **kwargs)) == expected


def test_huge_deltas_are_summed_exactly():
    # Python's integers never wrap; sums near 2**63 must come out as the reference's.
    big = 1 << 62
    rows = [(WRITE, 0, 1, 0, 10, big), (WRITE, 0, 1, 2, 12, big), (WRITE, 0, 1, 5, 6, -big)]
    rows += [(READ, 0, 1, 3, 8, v) for v in (0, big, -big, 2 * big, 5)]
    log = np.zeros(len(rows), dtype=RECORD_DTYPE)
    for i, (kind, item, item_id, s, e, v) in enumerate(rows):
        log[i] = (kind, item, 0, 0, item_id, s, e, v if -(1 << 63) <= v < 1 << 63 else 0, i)
    initial = InitialValues({0: (np.array([1]), np.array([0]))})
    got = outcome(validate, log, initial, keep_reads=True)
    assert got == outcome(reference_validate, log, initial, keep_reads=True)


@pytest.mark.parametrize("count", [5, 1 << 16, (1 << 16) + 1, 1 << 20])
def test_group_order_is_a_stable_sort(count):
    from bgbench.validation.index import group_order

    keys = np.random.default_rng(count).integers(0, count, 200_000)
    assert np.array_equal(group_order(keys, count), np.argsort(keys, kind="stable"))


def test_item_partition_is_the_original_hash():
    records, _ = synthetic_logs(50_000, items=5_000, seed=2)
    records["item_id"][::7] *= -123_456_789  # negative and large ids hash the same way too
    for parts in (2, 7, 20):
        expected = reference_item_partition(records, parts)
        got = item_partition(records, parts)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("spread", [1, 1 << 50])
def test_union_size_counts_distinct_values(spread):
    from bgbench.validation.runner import _union_size

    rng = np.random.default_rng(spread)
    parts = [np.unique(rng.integers(0, 5_000, 3_000) * spread) for _ in range(4)]
    assert _union_size(parts) == len(np.unique(np.concatenate(parts)))
    assert _union_size([]) == 0 and _union_size([np.empty(0, np.int64)]) == 0


def test_errors_match_the_reference():
    base = np.zeros(3, dtype=RECORD_DTYPE)
    base[0] = (WRITE, 0, 0, 0, 1, 0, 1, 1, 1)
    base[1] = (WRITE_ABS, 0, 0, 0, 1, 2, 3, 5, 2)
    base[2] = (READ, 0, 0, 0, 2, 4, 5, 5, 3)
    initial = InitialValues({0: (np.array([1, 2]), np.array([0, 0]))})
    mixed = outcome(validate, base, initial)
    assert mixed[0] == "error" and "both delta and absolute" in mixed[2]
    assert mixed == outcome(reference_validate, base, initial)
    missing = base.copy()
    missing["kind"][1] = WRITE
    missing["item_id"][2] = 9
    got = outcome(validate, missing, initial)
    assert (
        got[0] == "error" and "9" in got[2] and got == outcome(reference_validate, missing, initial)
    )
    no_kind = missing.copy()
    no_kind["item"][2] = 4
    got = outcome(validate, no_kind, initial)
    assert got[0] == "error" and got == outcome(reference_validate, no_kind, initial)
    unknown = base.copy()
    unknown["kind"][0] = 7
    got = outcome(validate, unknown, initial)
    assert (
        got[0] == "error" and "7" in got[2] and got == outcome(reference_validate, unknown, initial)
    )


def test_first_missing_initial_value_named_in_read_order():
    # ids 8 and 3 both lack initial values: the reference names the first read's (8).
    log = np.zeros(2, dtype=RECORD_DTYPE)
    log[0] = (READ, 0, 0, 0, 8, 0, 1, 0, 1)
    log[1] = (READ, 0, 0, 0, 3, 0, 1, 0, 1)
    initial = InitialValues({0: (np.array([1]), np.array([0]))})
    got = outcome(validate, log, initial)
    assert got == outcome(reference_validate, log, initial) and "id 8 " in got[2]


@pytest.mark.parametrize("stale_share", [0.01, 0.05])
def test_synthetic_logs_match_the_reference(stale_share):
    records, initial = synthetic_logs(
        60_000, items=3_000, stale_share=stale_share, seed=11, mean_duration_ms=20.0
    )
    got = snapshot(validate(records, initial, keep_sessions=True, keep_reads=True))
    expected = snapshot(reference_validate(records, initial, keep_sessions=True, keep_reads=True))
    assert got["unpredictable_reads"] > 10
    assert got == expected


def test_parallel_parts_match_the_reference(monkeypatch):
    records, initial = synthetic_logs(50_000, items=2_000, stale_share=0.02, seed=3)
    monkeypatch.setattr(runner, "PART_RECORDS", 12_000)
    expected = snapshot(reference_validate_in_memory(records, initial, 5, keep_reads=True))
    assert expected["unpredictable_reads"] > 10
    assert snapshot(validate_in_memory(records, initial, 2, keep_reads=True)) == expected
    assert snapshot(validate_in_memory(records, initial, 1, keep_reads=True)) == expected


@pytest.mark.slow
def test_a_stale_read_of_an_item_whose_only_writes_never_ended_is_never_valid(tmp_path):
    """Defect found by the equivalence test: an absolute item whose only writes are of unknown
    outcome crashed `bgbench validate` (IndexError in the lag) when a read of it was stale."""
    import json
    import subprocess
    import sys

    from bgbench.validation.initial import save_initial
    from bgbench.validation.logformat import LogWriter

    log = np.zeros(3, dtype=RECORD_DTYPE)
    log[0] = (WRITE_ABS, 0, 3, 0, 1, 10, NEVER, 5, 1)
    log[1] = (WRITE_ABS, 0, 3, 0, 1, 20, NEVER, 6, 2)
    log[2] = (READ, 0, 0, 0, 1, 30, 40, 9, 3)  # 9: neither the initial 0 nor a written value
    experiment = tmp_path / "exp-1"
    experiment.mkdir()
    writer = LogWriter(experiment / "log-f0.bglog")
    writer.append(log)
    writer.close()
    save_initial(experiment / "initial-f0.npz", InitialValues({0: (np.array([1]), np.array([0]))}))
    proc = subprocess.run(
        [sys.executable, "-m", "bgbench", "validate", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert (d["reads"], d["unpredictable_reads"], d["never_valid"]) == (1, 1, 1)
    assert d["lag"]["max_ms"] is None
