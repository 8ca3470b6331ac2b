"""A study's measurements in the results store: recorded in order, rows of differing
columns exported as one CSV, Parquet or JSON table."""

import csv
import json

import pyarrow.parquet as pq
import pytest

from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import UserError

ROWS = [
    ("load", {"consistency": "weak", "rows": 1000, "total_s": 0.5}),
    ("load", {"consistency": "strong", "rows": 1000, "total_s": 0.9}),
    ("queries", {"query": "Q3", "selectivity %": 0.2, "seconds": 0.001, "plan": "SEARCH"}),
]


@pytest.fixture
def store(tmp_path):
    db = ResultsStore(tmp_path)
    db.start_rating("R1", "study:load", "sqlite", json.dumps({"workload": {"name": "sensorlog"}}))
    for name, row in ROWS:
        db.add_measurement("R1", name, row)
    return db


def test_measurements_come_back_in_the_order_made(store):
    got = store.measurements("R1")
    assert [m["seq"] for m in got] == [1, 2, 3]
    assert [(m["name"], {k: v for k, v in m.items() if k not in ("seq", "name")}) for m in got] == [
        (n, r) for n, r in ROWS
    ]
    assert store.measurements("nope") == []


def test_csv_export_has_every_column_seen(store, tmp_path):
    out = tmp_path / "m.csv"
    assert store.export("R1", "csv", out) == 3
    with open(out) as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames == ["seq", "name", "consistency", "rows", "total_s", "query",
                                 "selectivity %", "seconds", "plan"]  # fmt: skip
    assert rows[2]["query"] == "Q3" and rows[2]["consistency"] == ""


def test_parquet_and_json_exports_hold_the_measurements(store, tmp_path):
    assert store.export("R1", "parquet", tmp_path / "m.parquet") == 3
    table = pq.read_table(tmp_path / "m.parquet").to_pylist()
    assert [r["name"] for r in table] == ["load", "load", "queries"]
    assert store.export("R1", "json", tmp_path / "m.json") == 3
    assert len(json.loads((tmp_path / "m.json").read_text())["measurements"]) == 3


def test_an_unknown_format_is_refused(store, tmp_path):
    with pytest.raises(UserError, match="csv, json or parquet"):
        store.export("R1", "xlsx", tmp_path / "m.xlsx")
