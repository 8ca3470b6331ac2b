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
from tests.unit.validator_reference import (
    reference_item_partition,
    reference_validate,
    reference_validate_in_memory,
)

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
