"""Fuzzing the log readers (issue 24): byte flips, cuts, duplicated ranges and forged records
with valid checksums. A reader returns records a genuine log could hold, or raises its
one-line error naming the file: never another exception, never a hang."""

import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bgbench.validation.bglogs import BGInputError, read_bg_logs, read_initial_csv
from bgbench.validation.logformat import (
    NEVER,
    READ,
    RECORD_DTYPE,
    WRITE,
    LogFormatError,
    LogWriter,
    read_log,
)
from bgbench.validation.records import DELTA_TOTAL_LIMIT, TIME_LIMIT, VALUE_LIMIT

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
KEY = ("thread", "start", "kind", "item", "item_id", "action", "session")


def genuine(n: int = 90) -> np.ndarray:
    """Three threads, each one action at a time (three records an action), in file order."""
    rec = np.zeros(n, dtype=RECORD_DTYPE)
    i = np.arange(n)
    rec["thread"] = (i // 3) % 3
    rec["start"] = (i // 9) * 1000 + rec["thread"] * 10
    rec["end"] = rec["start"] + 5
    rec["item_id"] = i % 3
    rec["item"] = 1
    rec["kind"] = np.where(i % 7 == 0, WRITE, READ)
    rec["value"] = np.where(rec["kind"] == WRITE, 1, 4)
    rec["session"] = i // 3
    return rec


def assert_possible(records: np.ndarray) -> None:
    """What a genuine log holds, checked here record by record (not by the reader's code)."""
    last_start: dict[int, int] = {}
    seen: set[tuple[int, ...]] = set()
    deltas = 0
    for r in records.tolist():
        row = dict(zip(RECORD_DTYPE.names or (), r, strict=True))
        assert row["kind"] in (0, 1, 2)
        assert row["start"] <= row["end"] and abs(row["start"]) <= TIME_LIMIT
        assert row["end"] == NEVER or abs(row["end"]) <= TIME_LIMIT
        assert not (row["kind"] == READ and row["end"] == NEVER)
        assert abs(row["value"]) <= VALUE_LIMIT
        assert row["start"] >= last_start.get(row["thread"], row["start"])
        last_start[row["thread"]] = row["start"]
        key = tuple(row[k] for k in KEY)
        assert key not in seen
        seen.add(key)
        deltas += abs(row["value"]) if row["kind"] == WRITE else 0
    assert deltas <= DELTA_TOTAL_LIMIT


def write(path: Path, batches: list[np.ndarray]) -> None:
    w = LogWriter(path)
    for b in batches:
        w.append(b)
    w.close()


def read_or_refuse(path: Path) -> None:
    try:
        records = read_log(path)
    except LogFormatError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return
    assert_possible(records)


damage = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 7)),
    st.tuples(st.just("cut"), st.integers(0, 10**6), st.just(0)),
    st.tuples(st.just("copy"), st.integers(0, 10**6), st.integers(1, 400)),
    st.tuples(st.just("drop"), st.integers(0, 10**6), st.integers(1, 400)),
)


@FUZZ
@given(st.lists(damage, min_size=1, max_size=3), st.integers(1, 4))
@pytest.mark.slow
def test_damaged_bytes_are_refused_or_harmless(changes, pieces):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log-f0.bglog"
        write(path, np.array_split(genuine(), pieces))
        data = bytearray(path.read_bytes())
        for what, at, arg in changes:
            at %= len(data) + 1
            if what == "flip" and at < len(data):
                data[at] ^= 1 << arg
            elif what == "cut":
                del data[at:]
            elif what == "copy":
                data[at:at] = data[at : at + arg]
            elif what == "drop":
                del data[at : at + arg]
        path.write_bytes(bytes(data))
        read_or_refuse(path)


forgery = st.one_of(
    st.tuples(st.just("repeat"), st.integers(0, 89), st.integers(0, 90)),
    st.tuples(st.just("move"), st.integers(0, 89), st.integers(0, 89)),
    st.tuples(st.just("field"), st.integers(0, 89), st.sampled_from((*KEY, "value", "end"))),
)


@FUZZ
@given(
    st.lists(forgery, min_size=1, max_size=3),
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.integers(1, 3),
)
@example([("field", 0, "start")], -(1 << 63), 1)  # np.abs(int64 min) < 0: once let through
@example([("field", 0, "end")], -(1 << 63), 1)
@pytest.mark.slow
def test_forged_records_with_valid_checksums_are_refused_or_possible(changes, number, pieces):
    records = genuine()
    for what, i, j in changes:
        i %= len(records)
        if what == "repeat":
            records = np.insert(records, min(j, len(records)), records[i])
        elif what == "move":
            j %= len(records)
            one = records[i].copy()
            records = np.insert(np.delete(records, i), j, one)
        else:
            field = str(j)
            info = np.iinfo(records.dtype[field])
            records[field][i] = min(max(number, info.min), info.max)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log-f0.bglog"
        write(path, np.array_split(records, pieces))
        read_or_refuse(path)


def test_the_genuine_log_reads_back_whole(tmp_path):
    path = tmp_path / "log-f0.bglog"
    write(path, np.array_split(genuine(), 4))
    assert np.array_equal(read_log(path), genuine())


bg_field = st.one_of(
    st.integers(-(1 << 64), 1 << 64).map(str),
    st.sampled_from(["1_00", " 7", "+7", "٣", "0x10", "", "NumFriends", "I", "D", "1e3"]),
    st.text(alphabet="0123456789-_,. \t\r", max_size=12),
)
bg_line = st.one_of(
    st.lists(bg_field, min_size=8, max_size=11).map(lambda f: ",".join(["READ", *f])),
    st.lists(bg_field, min_size=9, max_size=11).map(lambda f: ",".join(["UPDATE", *f])),
    st.builds(
        "READ,{},{},{},{},{},{},{},VP".format,
        st.sampled_from(["NumFriends", "Pending"]),
        *(st.integers(-3, 3).map(str) for _ in range(3)),
        st.integers(0, 50).map(str),
        st.integers(50, 99).map(str),
        st.integers(-(1 << 62), 1 << 62).map(str),
    ),
    st.builds(
        "UPDATE,NumFriends,{},{},{},{},{},1,{},AF".format,
        *(st.integers(-3, 3).map(str) for _ in range(3)),
        st.integers(0, 50).map(str),
        st.integers(50, 99).map(str),
        st.sampled_from(["I", "D", "X"]),
    ),
)


@FUZZ
@given(
    st.lists(bg_line, max_size=30),
    st.lists(bg_line, max_size=30),
    st.binary(max_size=60),
    st.lists(st.integers(0, 29), max_size=5),
)
@pytest.mark.slow
def test_bg_logs_give_possible_records_or_named_lines(reads, updates, junk, repeats):
    reads = reads + [reads[i] for i in repeats if i < len(reads)]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "read1-0.txt").write_text("\n".join(reads) + "\n", encoding="utf-8")
        (directory / "update1-0.txt").write_bytes("\n".join(updates).encode() + b"\n" + junk)
        logs = read_bg_logs(directory)
        for line in logs.malformed:
            assert line.startswith(str(directory)) and "\n" not in line
        assert_possible(logs.records)
        # and they are a log the reader takes as it is (records.RecordSequence)
        path = directory / "log-f0.bglog"
        write(path, [logs.records])
        assert np.array_equal(read_log(path), logs.records)


@FUZZ
@given(st.lists(st.lists(bg_field, min_size=1, max_size=4), max_size=40), st.binary(max_size=40))
@pytest.mark.slow
def test_bg_initial_values_are_sorted_unique_and_plausible_or_named(rows, junk):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "initial.csv"
        path.write_bytes("\n".join(",".join(r) for r in rows).encode() + b"\n" + junk)
        try:
            initial, malformed = read_initial_csv(path, {})
        except BGInputError as exc:
            assert str(path) in str(exc)
            return
        for line in malformed:
            assert line.startswith(f"{path}:")
        for ids, values in initial.by_kind.values():
            assert np.all(ids[1:] > ids[:-1])
            assert np.all(np.abs(values) <= VALUE_LIMIT)
        good = sum(len(ids) for ids, _ in initial.by_kind.values())
        counted = Counter(line.split(":")[1] for line in malformed)
        assert good + sum(counted.values()) <= len(rows) + junk.count(b"\n") + 1
