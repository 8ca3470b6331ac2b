"""The sensor-log workload's continuous-ingest rating on SQLite through the load engine,
and the validator on its logs: it flags a Q3 count that misses a committed insert and a Q1
that misses a committed reading (test bindings that drop them), and nothing on SQLite."""

import sqlite3
import threading
from pathlib import Path

import pytest

from bgbench.run_result import RunResult
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.sensorlog.config import SensorLogConfig
from bgbench.workloads.sensorlog.stores.sqlite import (
    SQLiteSensorBinding,
    SQLiteSensorConnection,
    SQLiteSensorOptions,
)
from bgbench.workloads.sensorlog.workload import ABOVE, Q1, Q3, SERIES_LENGTH, WORKLOAD

LONG = 120.0  # runs end on their operation count; this only bounds a hung store


def config(**workload) -> SensorLogConfig:
    return SensorLogConfig.model_validate(
        {"database": {"machines": 4, "sensors": 5, "readings": 200}, "workload": workload}
    )


def engine(tmp: Path, cfg: SensorLogConfig, binding=None, capacities=(1.0,), index=0):
    if binding is None:
        binding = SQLiteSensorBinding(SQLiteSensorOptions(path=str(tmp / "s.sqlite")))
    return FragmentEngine(WORKLOAD, cfg, "sqlite", {}, capacities, index, binding=binding)


def run(e: FragmentEngine, tmp: Path, name: str, ops=1500, threads=4) -> RunResult:
    return e.run(
        RunSpec(name, threads, LONG, ops, 7, tmp / name), threading.Event(), lambda *_: None
    )


def stored(path: Path, sql: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(sql).fetchone()[0])


@pytest.mark.parametrize("mix", ["ingest50", "ingest90", "query"])
def test_ingest_and_queries_validate_clean(tmp_path, mix):
    cfg = config(mix=mix, q3_selectivity=30)
    e = engine(tmp_path, cfg)
    try:
        e.prepare()
        summary = run(e, tmp_path, "clean")
        assert summary.errors == 0
        result = e.validate(tmp_path / "clean")
    finally:
        e.close()
    assert result.reads > 0 and result.unpredictable_reads == 0
    ingested = stored(tmp_path / "s.sqlite", "SELECT count(*) FROM measures") - cfg.database.rows
    assert (ingested > 0) == (mix != "query")
    assert result.writes >= ingested  # each INGEST writes its series' length (and maybe ABOVE)


def test_a_fragment_loads_only_its_machines_and_reload_drops_what_was_ingested(tmp_path):
    cfg = config(mix="ingest100")
    halves = (1.0, 1.0)
    first, second = engine(tmp_path, cfg, capacities=halves), engine(tmp_path, cfg, None, halves, 1)
    path = tmp_path / "s.sqlite"
    try:
        first.prepare()
        second.prepare(create_schema=False)
        assert stored(path, "SELECT count(*) FROM measures") == cfg.database.rows
        run(first, tmp_path, "grow", ops=300, threads=2)
        assert (
            stored(path, "SELECT count(*) FROM measures WHERE m < 2")
            == cfg.database.rows // 2 + 300
        )
        assert run(first, tmp_path, "again", ops=10, threads=1).start_state == "carry"
        first.fragment.ready("reload", lambda: None)
        assert stored(path, "SELECT count(*) FROM measures") == cfg.database.rows
    finally:
        first.close()
        second.close()


# -- the validator on sensor-log reads ---------------------------------------------------


class DroppingConnection(SQLiteSensorConnection):
    """A store that lags by one insert: Q3 leaves out the newest reading ingested above the
    threshold, and Q1 does not find the newest reading of an even series once ingest wrote
    one (rowids above the loaded rows are ingested)."""

    def __init__(self, conn: sqlite3.Connection, loaded: int) -> None:
        super().__init__(conn)
        self.loaded = loaded

    def count_above(self, x: float, m_lo: int, m_hi: int) -> int:
        # One statement: the count and the reading left out of it from one snapshot.
        above = "mv > ?1 AND m >= ?2 AND m < ?3"
        return int(
            self.conn.execute(
                f"SELECT (SELECT count(*) FROM measures WHERE {above}) - (SELECT count(*) "
                f"FROM measures WHERE rowid = (SELECT max(rowid) FROM measures WHERE "
                f"rowid > ?4 AND {above}))",
                (x, m_lo, m_hi, self.loaded),
            ).fetchone()[0]
        )

    def newest(self, m: int, s: int, bt: int) -> bool:
        row = self.conn.execute(
            "SELECT rowid FROM measures WHERE m = ? AND s = ? AND bt = ?", (m, s, bt)
        ).fetchone()
        if row is not None and row[0] > self.loaded and s % 2 == 0:
            return False
        return row is not None


class DroppingBinding(SQLiteSensorBinding):
    loaded = 0

    def connect(self) -> SQLiteSensorConnection:
        return DroppingConnection(self._open(), self.loaded)


def test_the_validator_flags_a_q3_and_a_q1_that_miss_committed_inserts(tmp_path):
    cfg = config(mix={"INGEST": 2, "Q1": 1, "Q3": 1}, q3_selectivity=50)
    binding = DroppingBinding(SQLiteSensorOptions(path=str(tmp_path / "s.sqlite")))
    binding.loaded = cfg.database.rows  # one fragment: rowids 1..rows are the loaded ones
    e = engine(tmp_path, cfg, binding)
    try:
        e.prepare()
        assert run(e, tmp_path, "dropped", threads=2).errors == 0
        result = e.validate(tmp_path / "dropped")
    finally:
        e.close()
    assert result.by_action["Q3"].unpredictable > 0
    assert result.by_action["Q1"].unpredictable > 0
    assert result.unpredictable_reads == (
        result.by_action["Q1"].unpredictable + result.by_action["Q3"].unpredictable
    )
    kinds = {(x["action"], x["item"]) for x in result.examples}
    assert kinds <= {(Q3, ABOVE), (Q1, SERIES_LENGTH)}
    for x in result.examples:
        if x["action"] == Q1:
            assert (x["item_id"] % cfg.database.sensors) % 2 == 0  # only even series hid
        assert x["lag_ms"] is not None and x["lag_ms"] >= 0, result.examples
