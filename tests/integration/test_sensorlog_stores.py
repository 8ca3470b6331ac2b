"""The contract every sensor-log store binding passes against its real server: the
studies' operations (reset, bulk load with indexes before or after, under both
consistency settings; Q1, Q2 and Q3 exact; a plan for each) and the rating's (fragments
loaded side by side, insert, key lookup, a machine range's count above a threshold, and a
run through the load engine that validates clean). Parametrised over every binding
registered in `bgbench.sensorlog_stores`; servers come from tests/integration/stores.py."""

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bgbench.sdk import blocking_connection
from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads import registry
from bgbench.workloads.sensorlog.config import SensorLogConfig, SensorLogDatabaseConfig
from bgbench.workloads.sensorlog.generator import (
    all_values,
    rows_of,
    series_rows,
    split_machines,
    thresholds,
)
from bgbench.workloads.sensorlog.store import Reading
from bgbench.workloads.sensorlog.workload import WORKLOAD, FragmentLogData
from tests.integration.stores import SERVERS

DB = SensorLogDatabaseConfig(machines=4, sensors=3, readings=150, seed=5)
CONFIG = SensorLogConfig(database=DB)
HALVES = (1.0, 1.0)
LONG = 300.0


def store_names() -> list[str]:
    return registry.store_names("sensorlog")


def make(name: str, options: dict, **extra: Any) -> Any:
    return registry.make_binding("sensorlog", name, {**options, **extra})


@pytest.fixture(params=store_names())
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict]]:
    name = request.param
    assert name in SERVERS, (
        f"no test server for store {name!r}: add it to tests/integration/stores.py"
    )
    for options in SERVERS[name](tmp_path, request):
        yield name, options


def loaded_study(name: str, options: dict, indexes: bool, consistency: str = "weak") -> Any:
    b = make(name, options, consistency=consistency)
    b.reset(indexes=indexes)
    beats = []
    n = b.bulk_load(rows_of(DB, range(DB.machines), DB.readings), lambda: beats.append(1))
    assert n == DB.rows and len(beats) >= DB.machines  # a beat per batch at least
    if not indexes:
        b.build_indexes()
    return b


# -- the studies -----------------------------------------------------------------------


@pytest.mark.parametrize("indexes", [True, False], ids=["indexes-before", "indexes-after"])
def test_queries_answer_exactly_after_a_bulk_load(server, indexes) -> None:
    name, options = server
    b = loaded_study(name, options, indexes)
    try:
        r = series_rows(DB, 2, 1, DB.readings)
        found = b.q1(2, 1, int(r.bt[40]))
        assert found == Reading(2, 1, int(r.bt[40]), int(r.et[40]), pytest.approx(float(r.mv[40])))
        assert b.q1(2, 1, int(r.bt[40]) + 1) is None
        values = all_values(DB, DB.readings)
        for th in thresholds(values, [0.5, 5.0, 40.0]):
            assert b.q3(th.x) == th.rows == int(np.count_nonzero(values > th.x))
            assert b.q2(th.x) == th.rows
        for query in ("Q1", "Q2", "Q3"):
            plan = b.plan(query, x=5.0, key=(2, 1, int(r.bt[40])))
            assert isinstance(plan, str) and plan.strip()
    finally:
        b.close()


@pytest.mark.parametrize("consistency", ["strong", "weak"])
def test_both_consistency_settings_load_and_say_what_they_set(server, consistency) -> None:
    name, options = server
    b = loaded_study(name, options, True, consistency)
    try:
        assert consistency in b.describe()
        assert set(type(b).consistency_settings) == {"strong", "weak"}
        assert b.q3(-1e9) == DB.rows  # every row is there
    finally:
        b.close()


def test_a_reset_empties_the_store(server) -> None:
    name, options = server
    b = loaded_study(name, options, True)
    try:
        b.reset(indexes=True)
        assert b.q3(-1e9) == 0
    finally:
        b.close()


# -- the rating ------------------------------------------------------------------------


class Fragments:
    def __init__(self, name: str, options: dict) -> None:
        self.bindings = [make(name, options), make(name, options)]
        self.data = [FragmentLogData(CONFIG, r, k) for k, r in enumerate(_halves())]
        self.bindings[0].create_schema(DB)
        self.bindings[1].use_schema(DB)
        for b, d in zip(self.bindings, self.data, strict=True):
            b.load_fragment(d, lambda: None)

    def close(self) -> None:
        for b in self.bindings:
            b.close()


def _halves() -> list[range]:
    return split_machines(DB.machines, HALVES)


def test_ingest_lookups_and_range_counts_on_fragments(server) -> None:
    name, options = server
    f = Fragments(name, options)
    c = blocking_connection(f.bindings[1])
    try:
        lo, hi = f.data[1].machines.start, f.data[1].machines.stop
        values = np.concatenate([series_rows(DB, m, s, DB.readings).mv for m in range(lo, hi)
                                 for s in range(DB.sensors)])  # fmt: skip
        x = float(np.median(values))
        assert c.count_above(x, lo, hi) == int(np.count_nonzero(values > x))
        r = series_rows(DB, lo, 0, DB.readings)
        assert c.newest(lo, 0, int(r.bt[-1]))
        new = Reading(lo, 0, int(r.et[-1]), int(r.et[-1]) + 500, x + 1.0)
        assert not c.newest(lo, 0, new.bt)
        c.insert(new)
        assert c.newest(lo, 0, new.bt)
        assert c.count_above(x, lo, hi) == int(np.count_nonzero(values > x)) + 1
        assert c.count_above(x, 0, lo) == c.count_above(x, 0, lo)  # the other fragment's
        f.bindings[1].load_fragment(f.data[1], lambda: None)  # a reload drops the insert
        assert not c.newest(lo, 0, new.bt)
        assert c.count_above(x, lo, hi) == int(np.count_nonzero(values > x))
    finally:
        c.close()
        f.close()


def test_a_run_through_the_engine_validates_clean(server, tmp_path) -> None:
    name, options = server
    cfg = SensorLogConfig.model_validate(
        {"database": DB.model_dump(), "workload": {"mix": "ingest50", "q3_selectivity": 20}}
    )
    e = FragmentEngine(WORKLOAD, cfg, name, options, (1.0,), 0)
    try:
        e.prepare()
        summary = e.run(
            RunSpec("contract", 4, LONG, 600, 3, tmp_path / "logs"),
            threading.Event(),
            lambda *_: None,
        )
        assert summary.errors == 0 and summary.actions == 600
        result = e.validate(tmp_path / "logs")
    finally:
        e.close()
    assert result.reads > 0 and result.unpredictable_reads == 0
