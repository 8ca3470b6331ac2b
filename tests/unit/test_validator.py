"""The exact validator against the paper's example and a brute-force enumeration of prefixes."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgbench.validation.checker import InitialValues, validate
from bgbench.validation.delta import valid_values_contain
from bgbench.validation.logformat import NEVER, READ, RECORD_DTYPE, WRITE, WRITE_ABS

ITEM = 0


def records(rows: list[tuple[int, int, int, int, int, int]]) -> np.ndarray:
    """rows of (kind, item_id, start, end, value, session)."""
    out = np.zeros(len(rows), dtype=RECORD_DTYPE)
    for i, (kind, item_id, s, e, v, sid) in enumerate(rows):
        out[i] = (kind, ITEM, 0, 0, item_id, s, e, v, sid)
    return out


def initial(values: dict[int, int]) -> InitialValues:
    ids = np.array(sorted(values), dtype=np.int64)
    return InitialValues({ITEM: (ids, np.array([values[i] for i in ids], dtype=np.int64))})


def brute_force_valid(init: int, read: tuple[int, int], writes: list[tuple[int, int, int]]) -> set:
    """docs/architecture.md's rule, literally: every subset of the overlap that is a prefix."""
    rs, re_ = read
    applied = sum(d for s, e, d in writes if e < rs)
    overlapping = [(s, e, d) for s, e, d in writes if not e < rs and not s > re_]
    valid = set()
    for n in range(len(overlapping) + 1):
        for subset in itertools.combinations(range(len(overlapping)), n):
            inside = set(subset)
            ok = all(
                not overlapping[a][1] < overlapping[b][0]
                for a in range(len(overlapping))
                if a not in inside
                for b in inside
            )
            if ok:
                valid.add(init + applied + sum(overlapping[i][2] for i in inside))
    return valid


def test_table_10_of_the_paper():
    log = records(
        [
            (READ, 1, 0, 10, 3, 1),
            (WRITE, 1, 1, 3, -1, 2),
            (WRITE, 1, 2, 4, 1, 3),
            (WRITE, 1, 5, 6, 2, 4),
        ]
    )
    assert brute_force_valid(0, (0, 10), [(1, 3, -1), (2, 4, 1), (5, 6, 2)]) == {-1, 0, 1, 2}
    result = validate(log, initial({1: 0}))
    assert (result.reads, result.unpredictable_reads) == (1, 1)
    assert result.unpredictable_sessions == 1
    for ok_value in (-1, 0, 1, 2):
        log["value"][0] = ok_value
        assert validate(log, initial({1: 0})).unpredictable_reads == 0


def test_a_write_then_its_undo_cannot_be_seen_reversed():
    # +1 over [10,20] then -1 over [30,40]; a read over [5,50] seeing initial-1 is stale
    # (BG's own sweep lets it pass; we must not).
    writes = [(10, 20, 1), (30, 40, -1)]
    assert brute_force_valid(10, (5, 50), writes) == {10, 11}
    log = records([(READ, 7, 5, 50, 9, 1)] + [(WRITE, 7, s, e, d, 2) for s, e, d in writes])
    assert validate(log, initial({7: 10})).unpredictable_reads == 1


def test_reads_without_overlap_see_exactly_the_applied_writes():
    log = records(
        [
            (WRITE, 1, 0, 5, 1, 1),
            (WRITE, 1, 6, 8, 1, 1),
            (READ, 1, 10, 12, 7, 2),  # 5 + 2: valid
            (READ, 1, 10, 12, 6, 3),  # stale
            (READ, 2, 0, 1, 4, 4),  # never written: must equal its initial value
            (READ, 2, 0, 1, 5, 5),
        ]
    )
    result = validate(log, initial({1: 5, 2: 4}))
    assert result.reads == 4
    assert result.unpredictable_reads == 2
    assert result.sessions == 4
    assert result.unpredictable_sessions == 2
    assert [e["observed"] for e in result.examples] == [6, 5]


def test_no_writes_at_all():
    log = records([(READ, 1, 0, 1, 3, 1), (READ, 1, 2, 3, 4, 2)])
    result = validate(log, initial({1: 3}))
    assert (result.reads, result.unpredictable_reads, result.writes) == (2, 1, 0)


def test_a_write_of_unknown_outcome_may_or_may_not_apply():
    log = records([(WRITE, 1, 5, NEVER, 1, 1), (READ, 1, 10, 11, 0, 2), (READ, 1, 10, 11, 1, 3)])
    assert validate(log, initial({1: 0})).unpredictable_reads == 0
    log["value"][2] = 2
    assert validate(log, initial({1: 0})).unpredictable_reads == 1


def test_missing_initial_value_is_an_error():
    log = records([(READ, 99, 0, 1, 0, 1)])
    try:
        validate(log, initial({1: 0}))
    except ValueError as exc:
        assert "99" in str(exc)
    else:
        raise AssertionError("a read of an unknown item must not pass silently")


time_point = st.integers(min_value=0, max_value=30)


UNIT_DELTAS = st.sampled_from([-1, 1])


@st.composite
def histories(draw, deltas=UNIT_DELTAS):
    writes = []
    for _ in range(draw(st.integers(0, 6))):
        s = draw(time_point)
        e = s + draw(st.integers(0, 8))
        writes.append((s, e, draw(deltas)))
    rs = draw(time_point)
    read = (rs, rs + draw(st.integers(0, 10)))
    init = draw(st.integers(-3, 3))
    return init, read, writes


def _check(init, read, writes, observed_offsets):
    valid = brute_force_valid(init, read, writes)
    base = init + sum(d for s, e, d in writes if e < read[0])
    overlapping = [(s, e, d) for s, e, d in writes if not e < read[0] and not s > read[1]]
    for observed in {base + k for k in observed_offsets} | valid:
        fast = valid_values_contain(
            observed,
            base,
            [s for s, _, _ in overlapping],
            [e for _, e, _ in overlapping],
            [d for _, _, d in overlapping],
        )
        assert fast == (observed in valid), (init, read, writes, observed, valid)
        log = records([(READ, 1, read[0], read[1], observed, 1)] + [
            (WRITE, 1, s, e, d, 2) for s, e, d in writes
        ])  # fmt: skip
        assert validate(log, initial({1: init})).unpredictable_reads == int(observed not in valid)


@settings(max_examples=400, deadline=None)
@given(histories())
@pytest.mark.slow
def test_unit_deltas_match_brute_force(history):
    init, read, writes = history
    _check(init, read, writes, range(-7, 8))


@settings(max_examples=300, deadline=None)
@given(histories(deltas=st.integers(-3, 4)))
@pytest.mark.slow
def test_any_integer_deltas_match_brute_force(history):
    init, read, writes = history
    _check(init, read, writes, range(-12, 13))


@settings(max_examples=100, deadline=None)
@given(st.lists(histories(), min_size=1, max_size=8))
def test_many_items_at_once_match_brute_force(items):
    rows, inits, expected = [], {}, 0
    for item_id, (init, read, writes) in enumerate(items):
        inits[item_id] = init
        valid = brute_force_valid(init, read, writes)
        observed = init + (item_id % 3) - 1
        expected += observed not in valid
        rows.append((READ, item_id, read[0], read[1], observed, item_id))
        rows += [(WRITE, item_id, s, e, d, 100 + item_id) for s, e, d in writes]
    assert validate(records(rows), initial(inits)).unpredictable_reads == expected


# -- absolute writes ----------------------------------------------------------------------


def brute_force_absolute(init: int, read, writes) -> set:
    """Values of every write that can be last of F plus a possible prefix of O; or initial."""
    rs, re_ = read
    before = [w for w in writes if w[1] < rs]
    overlapping = [w for w in writes if not w[1] < rs and not w[0] > re_]
    valid = set()
    for n in range(len(overlapping) + 1):
        for subset in itertools.combinations(range(len(overlapping)), n):
            inside = set(subset)
            if not all(
                not overlapping[a][1] < overlapping[b][0]
                for a in range(len(overlapping))
                if a not in inside
                for b in inside
            ):
                continue
            prefix = before + [overlapping[i] for i in inside]
            if not prefix:
                valid.add(init)
            for w in prefix:
                if not any(w[1] < a[0] for a in prefix if a is not w):
                    valid.add(w[2])
    return valid


def absolute_records(rows):
    out = records(rows)
    out["kind"][out["kind"] == WRITE] = WRITE_ABS
    return out


@settings(max_examples=400, deadline=None)
@given(histories(deltas=st.integers(0, 6)))
@pytest.mark.slow
def test_absolute_writes_match_brute_force(history):
    init, read, writes = history
    valid = brute_force_absolute(init, read, writes)
    for observed in set(range(-4, 8)) | valid:
        log = absolute_records(
            [(READ, 1, read[0], read[1], observed, 1)]
            + [(WRITE, 1, s, e, v, 2) for s, e, v in writes]
        )
        got = validate(log, initial({1: init})).unpredictable_reads
        assert got == int(observed not in valid), (init, read, writes, observed, valid)


def test_absolute_write_example():
    # a=5 over [1,2], b=7 over [3,4]; read over [5,6] must see 7; read over [2,3] may see 5 or 7
    rows = [(WRITE, 1, 1, 2, 5, 1), (WRITE, 1, 3, 4, 7, 2)]
    for read, value, stale in [((5, 6), 7, 0), ((5, 6), 5, 1), ((2, 3), 5, 0), ((2, 3), 7, 0),
                               ((0, 0), 0, 0), ((0, 0), 5, 1)]:  # fmt: skip
        log = absolute_records([(READ, 1, read[0], read[1], value, 3), *rows])
        assert validate(log, initial({1: 0})).unpredictable_reads == stale, (read, value)


def test_an_item_cannot_mix_delta_and_absolute_writes():
    log = records([(WRITE, 1, 0, 1, 1, 1), (WRITE, 1, 2, 3, 5, 2), (READ, 1, 4, 5, 5, 3)])
    log["kind"][1] = WRITE_ABS
    try:
        validate(log, initial({1: 0}))
    except ValueError as exc:
        assert "both delta and absolute" in str(exc)
    else:
        raise AssertionError("mixed write kinds must be refused")


# -- staleness lag ------------------------------------------------------------------------


def test_lag_is_the_time_since_the_observed_value_stopped_being_current():
    # +1 ends at 100; a read starting at 1,000,100 that still sees the initial value is
    # 1,000,000 ns (1 ms) stale.
    log = records([(WRITE, 1, 50, 100, 1, 1), (READ, 1, 1_000_100, 1_000_200, 0, 2)])
    result = validate(log, initial({1: 0}))
    assert result.unpredictable_reads == 1
    assert result.lags_ms == [1.0]
    assert result.lag_summary()["max_ms"] == 1.0
    assert result.examples[0]["lag_ms"] == 1.0


def test_a_value_never_held_has_no_lag():
    log = records([(WRITE, 1, 50, 100, 1, 1), (READ, 1, 200, 300, 9, 2)])
    result = validate(log, initial({1: 0}))
    assert result.unpredictable_reads == 1 and result.never_valid == 1 and result.lags_ms == []
