"""The EHR workload on SQLite through the load engine, and the validator on EHR logs: it
flags a read that misses a completed insert, and not one that overlaps the insert."""

import random
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from bgbench.errors import UserError
from bgbench.run_result import RunResult
from bgbench.sdk import Timer, UnitContext, blocking, run_blocking
from bgbench.validation.initial import InitialValues
from bgbench.validation.logformat import NEVER, READ, WRITE, LogWriter, read_log
from bgbench.validation.runner import validate_logs
from bgbench.worker.engine import FragmentEngine, RunSpec, log_path
from bgbench.worker.measurement import Recorder
from bgbench.workloads.ehr.config import EHRConfig
from bgbench.workloads.ehr.store import AsyncEHRConnection, LabResult
from bgbench.workloads.ehr.stores.sqlite import SQLiteBinding, SQLiteConnection, SQLiteOptions
from bgbench.workloads.ehr.workload import READ as READ_ACTION
from bgbench.workloads.ehr.workload import RESULT_COUNT, WORKLOAD
from bgbench.workloads.ehr.workload import WRITE as WRITE_ACTION

ONE = (1.0,)
LONG = 120.0  # runs end on their operation count; this only bounds a hung store


async def _no_think(_seconds: float) -> bool:
    return True


def config(patients: int = 500, **workload) -> EHRConfig:
    return EHRConfig.model_validate({"database": {"patients": patients}, "workload": workload})


def engine(tmp: Path, cfg: EHRConfig, binding=None, capacities=ONE, index=0) -> FragmentEngine:
    if binding is None:
        binding = SQLiteBinding(SQLiteOptions(path=str(tmp / "ehr.sqlite")))
    e = FragmentEngine(WORKLOAD, cfg, "sqlite", {}, capacities, index, binding=binding)
    return e


def run(e: FragmentEngine, tmp: Path, name: str, ops=2000, threads=4, **spec) -> RunResult:
    run_spec = RunSpec(name, threads, LONG, ops, 7, tmp / name, **spec)
    return e.run(run_spec, threading.Event(), lambda *_: None)


def stored_counts(path: Path) -> dict[int, int]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT patient, count(*) FROM results GROUP BY patient")
        return {int(p): int(n) for p, n in rows}


@pytest.fixture
def loaded(tmp_path):
    e = engine(tmp_path, config())
    e.prepare()
    yield e
    e.close()


def test_reads_and_writes_on_sqlite_validate_clean(loaded, tmp_path):
    summary = run(loaded, tmp_path, "e1")
    assert summary.errors == 0 and not summary.aborted
    assert set(summary.per_action) == {"READ", "WRITE"}
    assert summary.actions >= 2000
    writes = summary.per_action["WRITE"].count
    assert 0.1 < writes / summary.actions < 0.3  # the 80/20 mix
    result = loaded.validate(tmp_path / "e1")
    assert result.log_records == len(read_log(log_path(tmp_path / "e1", 0)))
    assert result.reads == summary.per_action["READ"].count
    assert result.writes == writes
    assert result.unpredictable_reads == 0, result.examples[:2]
    assert set(result.by_item) == {"patient result count"}
    # the workload's picture is what the store holds
    initial = loaded.fragment.initial_values().by_kind[RESULT_COUNT]
    held = stored_counts(tmp_path / "ehr.sqlite")
    assert {p: n for p, n in zip(*(a.tolist() for a in initial), strict=True) if n} == held
    assert sum(held.values()) == int(loaded.fragment.data.initial_counts.sum()) + writes


def test_a_read_returns_the_most_recent_results_and_their_count(loaded, tmp_path):
    data = loaded.fragment.data
    patient = int(data.patients[np.argmax(data.initial_counts)])
    conn = loaded.binding.connect()
    try:
        rows, count = conn.recent_results(patient, 5)
        assert count == int(data.initial_counts.max()) > 5 and len(rows) == 5
        times = [r.effective_ms for r in rows]
        assert times == sorted(times, reverse=True)
        new = loaded.fragment.next_result(patient, 0.5)
        conn.insert_result(new)
        rows, after = conn.recent_results(patient, 5)
        assert after == count + 1 and rows[0] == new
        assert conn.recent_results(10**9, 5) == ([], 0)  # nobody: no rows, count 0
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("mix", "played"),
    [
        ("readonly", {"READ"}),
        ("writeonly", {"WRITE"}),
        ({"READ": 1, "WRITE": 1}, {"READ", "WRITE"}),
    ],
)
def test_every_mix_plays_its_operations(tmp_path, mix, played):
    e = engine(tmp_path, config(mix=mix))
    try:
        e.prepare()
        summary = run(e, tmp_path, "m", ops=400)
        assert set(summary.per_action) == played and summary.errors == 0
        assert e.validate(tmp_path / "m").unpredictable_reads == 0
    finally:
        e.close()


@pytest.mark.parametrize("policy", ["carry", "reload", "readback"])
def test_every_start_state_validates_clean(tmp_path, policy):
    # few patients, many writes: each experiment starts from what the last one wrote
    e = engine(tmp_path, config(patients=40, mix={"READ": 1, "WRITE": 1}))
    try:
        e.prepare()
        for i in range(3):
            summary = run(e, tmp_path, f"{policy}{i}", ops=600, start_state=policy)
            assert summary.start_state == policy and summary.errors == 0
            result = e.validate(tmp_path / f"{policy}{i}")
            assert result.writes > 0
            assert result.unpredictable_reads == 0, (policy, i, result.examples[:2])
        picture = int(e.fragment.initial_values().by_kind[RESULT_COUNT][1].sum())
        assert picture == sum(stored_counts(tmp_path / "ehr.sqlite").values())
        added = picture - int(e.fragment.data.initial_counts.sum())
        last = summary.per_action["WRITE"].count
        assert added == last if policy == "reload" else added > last  # carried over
    finally:
        e.close()


@pytest.mark.parametrize("hashed", [False, True])
def test_fragments_sharing_a_database_never_collide_on_keys(tmp_path, hashed):
    cfg = config(patients=300, mix="writeonly", hashed_keys=hashed)
    engines = [engine(tmp_path, cfg, capacities=(1.0, 1.0), index=k) for k in range(2)]
    try:
        engines[0].prepare()
        engines[1].prepare(create_schema=False)
        written = 0
        for k, e in enumerate(engines):
            summary = run(e, tmp_path, f"f{k}", ops=500)
            # a key taken by the other fragment would fail the insert (primary key)
            assert summary.errors == 0, summary.error_counts
            written += summary.per_action["WRITE"].count
        held = sum(stored_counts(tmp_path / "ehr.sqlite").values())
        loaded = sum(int(e.fragment.data.initial_counts.sum()) for e in engines)
        assert held == loaded + written and written >= 1000
    finally:
        for e in engines:
            e.close()


def test_loading_beats_at_least_once_per_batch(tmp_path):
    e = engine(tmp_path, config(patients=5000))
    beats = []
    e.progress = lambda: beats.append(1)
    try:
        e.prepare()
    finally:
        e.close()
    data = e.fragment.data
    batches = sum(1 for _ in data.patient_batches()) + sum(1 for _ in data.result_batches())
    assert len(beats) >= batches > 10


class FailingInserts(SQLiteBinding):
    def connect(self) -> SQLiteConnection:
        conn = super().connect()

        def broken(row: LabResult) -> None:
            raise RuntimeError("disk on fire")

        conn.insert_result = broken  # type: ignore[method-assign]
        return conn


def test_a_failed_insert_is_an_unknown_outcome_and_forces_a_reload(tmp_path):
    binding = FailingInserts(SQLiteOptions(path=str(tmp_path / "ehr.sqlite")))
    e = engine(tmp_path, config(mix={"READ": 1, "WRITE": 1}), binding)
    try:
        e.prepare()
        summary = run(e, tmp_path, "x", ops=200, threads=2)
        assert summary.errors > 0 and summary.state_uncertain
        writes = read_log(log_path(tmp_path / "x", 0))
        writes = writes[writes["kind"] == WRITE]
        assert len(writes) > 0 and np.all(writes["end"] == NEVER)
        assert e.validate(tmp_path / "x").unpredictable_reads == 0
        assert run(e, tmp_path, "y", ops=10, threads=1).start_state.startswith("reload")
    finally:
        e.close()


# -- the validator on EHR reads --------------------------------------------------------------


class HidingConnection(SQLiteConnection):
    """A replica that has not caught up: for even patients it leaves out the newest result
    when a run inserted it, from the rows and from the count."""

    def __init__(self, conn: sqlite3.Connection, first_inserted: int) -> None:
        super().__init__(conn)
        self.first_inserted = first_inserted

    def recent_results(self, patient: int, k: int) -> tuple[list[LabResult], int]:
        rows, count = super().recent_results(patient, k + 1)
        if patient % 2 == 0 and rows and rows[0].id >= self.first_inserted:
            return rows[1 : k + 1], count - 1
        return rows[:k], count


class HidingBinding(SQLiteBinding):
    first_inserted = 0

    def connect(self) -> SQLiteConnection:
        return HidingConnection(self._open(), self.first_inserted)


def test_the_validator_flags_reads_that_miss_a_completed_insert(tmp_path):
    cfg = config(patients=30, mix={"READ": 3, "WRITE": 1})
    binding = HidingBinding(SQLiteOptions(path=str(tmp_path / "ehr.sqlite")))
    binding.first_inserted = cfg.database.patients * cfg.database.maxresults  # unhashed keys
    e = engine(tmp_path, cfg, binding)
    try:
        e.prepare()
        summary = run(e, tmp_path, "hidden", ops=2000)
        assert summary.errors == 0
        result = e.validate(tmp_path / "hidden")
    finally:
        e.close()
    assert result.unpredictable_reads > 0
    assert result.by_action["READ"].unpredictable == result.unpredictable_reads
    for example in result.examples:
        assert example["item"] == RESULT_COUNT and example["action"] == READ_ACTION
        assert example["item_id"] % 2 == 0  # only the patients whose results were hidden
        assert example["lag_ms"] is not None and example["lag_ms"] >= 0
    assert result.never_valid == 0  # each count missed was right once, before the insert


class Gate:
    """Awaiting it suspends the coroutine once: the test decides when it goes on."""

    def __await__(self):  # type: ignore[no-untyped-def]
        yield


def test_a_read_overlapping_an_insert_may_see_it_or_not_and_a_later_one_must(loaded, tmp_path):
    """Four reads around three inserts, logged by the real Timer to a real log file over
    real SQLite; the interleaving is fixed by stepping coroutines, not by a clock."""
    data, fragment = loaded.fragment.data, loaded.fragment
    initial = fragment.initial_values()
    a, b, c = (int(p) for p in data.patients[:3])
    path = tmp_path / "log.bglog"
    log = LogWriter(path)
    rec = Recorder(log)
    conn = blocking(loaded.binding.connect(), AsyncEHRConnection)
    reader, writer = (UnitContext(Timer(conn, rec, t), random.Random(t), _no_think) for t in (0, 1))

    def timed_read(sid: int, call, observed):
        reader.sid = sid
        return reader.read(READ_ACTION, call, observed)

    def seen(patient: int):
        return lambda answer: ((RESULT_COUNT, patient, answer[1]),)

    def insert(patient: int, sid: int) -> None:
        row = fragment.next_result(patient, 0.3)
        call = conn.insert_result(row)
        writer.sid = sid
        assert run_blocking(writer.write(WRITE_ACTION, call, ((RESULT_COUNT, patient, 1),)))

    async def query_then_wait(patient: int):
        answer = await conn.recent_results(patient, 5)
        await Gate()
        return answer

    async def wait_then_query(patient: int):
        await Gate()
        return await conn.recent_results(patient, 5)

    async def answered(answer):
        return answer

    counts = {p: int(data.initial_counts[data.patients == p][0]) for p in (a, b, c)}
    try:
        # 1. begins, the insert runs whole, then it queries: sees the insert
        r1 = timed_read(1, wait_then_query(a), seen(a))
        r1.send(None)
        insert(a, 101)
        with pytest.raises(StopIteration):
            r1.send(None)
        # 2. begins and queries, the insert runs whole, then it ends: does not see it
        r2 = timed_read(2, query_then_wait(b), seen(b))
        r2.send(None)
        insert(b, 102)
        with pytest.raises(StopIteration):
            r2.send(None)
        # 3. a stale answer, fetched before the insert, handed out by a read begun after it
        stale = run_blocking(conn.recent_results(c, 5))
        insert(c, 103)
        run_blocking(timed_read(3, answered(stale), seen(c)))
        # 4. a read begun after the insert that sees it
        run_blocking(timed_read(4, conn.recent_results(c, 5), seen(c)))
    finally:
        rec.finish()
        log.close()
        run_blocking(conn.close())
    records = read_log(path)
    reads = records[records["kind"] == READ]
    observed = dict(zip(reads["session"].tolist(), reads["value"].tolist(), strict=True))
    assert observed == {1: counts[a] + 1, 2: counts[b], 3: counts[c], 4: counts[c] + 1}
    writes = records[records["kind"] == WRITE]
    w3, r3 = writes[writes["session"] == 103][0], reads[reads["session"] == 3][0]
    assert w3["end"] < r3["start"]  # read 3 began after its insert had completed
    for sid, wsid in ((1, 101), (2, 102)):  # reads 1 and 2 overlap their inserts
        r, w = reads[reads["session"] == sid][0], writes[writes["session"] == wsid][0]
        assert r["start"] <= w["start"] and w["end"] <= r["end"]

    result, _ = validate_logs([path], initial, workers=1)
    assert result.reads == 4 and result.writes == 3
    assert result.unpredictable_reads == 1
    [flagged] = result.examples
    assert flagged["session"] == 3 and flagged["item_id"] == c
    assert flagged["observed"] == counts[c] and flagged["initial"] == counts[c]


def test_initial_values_cover_every_patient_of_the_fragment(loaded):
    initial = loaded.fragment.initial_values()
    assert isinstance(initial, InitialValues)
    ids, values = initial.by_kind[RESULT_COUNT]
    assert np.array_equal(ids, loaded.fragment.data.patients)
    assert np.array_equal(values, loaded.fragment.data.initial_counts)


def test_loops_sharing_patients_validate_clean(tmp_path):
    # not exclusive, 5 patients, 4 loops: reads overlap inserts to the same patient, and
    # the validator accepts either answer of SQLite's serial order
    e = engine(tmp_path, config(patients=5, exclusive=False, mix={"READ": 1, "WRITE": 1}))
    try:
        e.prepare()
        summary = run(e, tmp_path, "shared", ops=2000)
        assert summary.errors == 0
        result = e.validate(tmp_path / "shared")
    finally:
        e.close()
    assert result.reads > 500 and result.writes > 500
    assert result.unpredictable_reads == 0, result.examples[:2]
    records = read_log(log_path(tmp_path / "shared", 0))
    reads, writes = records[records["kind"] == READ], records[records["kind"] == WRITE]
    overlapping = (
        (reads["item_id"][:, None] == writes["item_id"][None, :])
        & (writes["start"][None, :] <= reads["end"][:, None])
        & (writes["end"][None, :] >= reads["start"][:, None])
    ).any(axis=1)
    assert overlapping.sum() > 0  # the case this test is about did happen


def test_a_smaller_database_in_the_same_file_drops_the_larger_ones_patients(tmp_path):
    big = engine(tmp_path, config(patients=300, mix="writeonly"))
    try:
        big.prepare()
        assert run(big, tmp_path, "big", ops=300).errors == 0
    finally:
        big.close()
    # the smaller database's inserts start at key 10 * 20, where patient 10's loaded
    # results were: they are gone with it
    small = engine(tmp_path, config(patients=10, mix="writeonly"))
    try:
        small.prepare()
        summary = run(small, tmp_path, "small", ops=300)
    finally:
        small.close()
    assert summary.errors == 0, summary.error_counts
    assert set(stored_counts(tmp_path / "ehr.sqlite")) <= set(range(10))


def test_a_path_that_cannot_hold_a_database_is_one_clear_error(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    binding = SQLiteBinding(SQLiteOptions(path=str(tmp_path / "file" / "sub" / "ehr.sqlite")))
    with pytest.raises(UserError, match=r"store\.options\.path: cannot use .* directory"):
        binding.create_schema(config().database)
