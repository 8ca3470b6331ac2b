"""The sensor-log workload through the `bgbench` CLI on SQLite: the continuous-ingest run
(real agents over gRPC), the two studies recorded and exportable, and bad input."""

import csv
import json
from pathlib import Path

import pytest

from bgbench.coordinator.storage.results import ResultsStore
from tests.helpers import bgbench
from tests.integration.stores import SERVERS

SMALL = ["-p", "sensorlog.database.machines=6", "-p", "sensorlog.database.readings=500"]


def test_an_ingest_run_prints_each_action_and_no_unpredictable_read(tmp_path):
    proc = bgbench(
        "run", "--workload", "sensorlog", "--store", "sqlite", "--threads", "8",
        "--duration", "5", "--results", str(tmp_path), "--json",
        "-p", f"store.options.path={tmp_path / 's.sqlite'}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["fault"] == "" and r["errors"] == 0 and r["actions_per_s"] > 0
    per_action = {a["action"]: a for a in r["per_action"]}
    assert set(per_action) == {"INGEST", "Q1", "Q3"}
    assert all(a["count"] > 0 for a in per_action.values())
    assert 0.35 < per_action["INGEST"]["count"] / r["actions"] < 0.65  # ingest50
    assert r["reads"] == per_action["Q1"]["count"] + per_action["Q3"]["count"]
    assert r["unpredictable_reads"] == 0
    assert set(r["by_item"]) == {"series length", "readings above threshold"}
    [record] = ResultsStore(tmp_path).ratings()
    assert record["workload"] == "sensorlog"


def test_the_load_study_is_recorded_and_exported(tmp_path):
    proc = bgbench(
        "study", "load", "--workload", "sensorlog", "--store", "sqlite",
        "--results", str(tmp_path), "--json", "-p", f"store.options.path={tmp_path / 'l.sqlite'}",
        "-p", "sensorlog.study.sizes=[3000,6000]", "-p", "sensorlog.study.runs=2", *SMALL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    [load, consistency] = record["tables"]
    assert load["name"] == "load" and consistency["name"] == "consistency"
    groups = {(r["consistency"], r["indexes"], r["rows"]) for r in load["rows"]}
    assert groups == {(c, i, n) for c in ("strong", "weak") for i in ("before", "after")
                      for n in (3000, 6000)}  # fmt: skip
    for row in load["rows"]:
        assert row["runs"] == 2 and row["rows/s"] > 0
        assert row["total s"] == pytest.approx(row["load s"] + row["index s"])
        assert (row["index s"] > 0) == (row["indexes"] == "after")

    db = ResultsStore(tmp_path)
    [rating] = db.ratings()
    assert rating["objective"] == "study:load" and rating["status"] == "done"
    measured = db.measurements(rating["id"])
    assert len(measured) == 2 * 2 * 2 * 2  # consistency x timing x size x runs
    out = tmp_path / "load.csv"
    exported = bgbench("results", "export", rating["id"], "--results", str(tmp_path),
                       "--format", "csv", "-o", str(out))  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 16 and {r["name"] for r in rows} == {"load"}
    shown = bgbench("results", "show", rating["id"], "--results", str(tmp_path))
    assert shown.returncode == 0 and "Bulk loading into sqlite" in shown.stdout


def test_the_query_study_checks_every_answer_and_shows_plans(tmp_path):
    proc = bgbench(
        "study", "queries", "--workload", "sensorlog", "--store", "sqlite",
        "--results", str(tmp_path), "-p", f"store.options.path={tmp_path / 'q.sqlite'}", *SMALL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "measures_mv" in proc.stdout and "measures_key" in proc.stdout  # the plans
    [rating] = ResultsStore(tmp_path).ratings()
    summary = json.loads(rating["summary_json"])
    queries, mapping = summary["tables"]
    assert [r["selectivity %"] for r in mapping["rows"]] == [0.002, 0.02, 0.2, 0.25, 1, 2, 5]
    total = 6 * 10 * 500
    for r in mapping["rows"]:
        assert r["of"] == total and abs(r["rows"] - r["selectivity %"] / 100 * total) <= 1
    kinds = [(r["query"], r["selectivity %"]) for r in queries["rows"]]
    assert kinds[0] == ("Q1", None) and len(kinds) == 1 + 2 * 7
    assert all(r["mean ms"] > 0 and r["plan"] for r in queries["rows"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["study", "compact", "--workload", "sensorlog"], "unknown study 'compact'"),
        (["study", "load", "--workload", "bg"], "workload bg has none"),
        (["study", "load", "--workload", "sensorlog", "--store", "model"], "a real store"),
        (["study", "load", "--workload", "sensorlog", "-p", "sensorlog.study.runs=0"],
         "sensorlog.study.runs"),
        (["run", "--workload", "sensorlog", "--mix", "ingest33"], "sensorlog.workload.mix"),
    ],
)  # fmt: skip
def test_bad_input_is_one_clear_line(args, needle, tmp_path):
    proc = bgbench(*args, "--results", str(tmp_path / "r"))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert not Path(tmp_path / "r" / "bgbench.sqlite").exists()  # nothing recorded


def server_args(options: dict) -> list[str]:
    """-p options reaching the store's test server (a fresh database or keyspace)."""
    out = []
    for k, v in options.items():
        out += ["-p", f"store.options.{k}={','.join(v) if isinstance(v, list) else v}"]
    return out


TINY = [*SMALL, "-p", "sensorlog.database.readings=100", "-p", "sensorlog.study.runs=1",
        "-p", "sensorlog.study.sizes=[1200,2400]", "-p", "sensorlog.study.keys=10"]  # fmt: skip


@pytest.mark.parametrize("store", ["postgres", "mongodb", "cassandra"])
def test_load_queries_and_ingest_on_a_real_server(store, tmp_path, request):
    """The sensor-log commands of docs/guide/workloads-included.md on each server CI starts."""
    server = SERVERS[store](tmp_path, request)
    try:
        args = server_args(next(server))
        ran_everything(store, args, tmp_path)
    finally:
        server.close()


def ran_everything(store: str, args: list[str], tmp_path: Path) -> None:
    common = ["--workload", "sensorlog", "--store", store, "--results", str(tmp_path), *TINY]
    load = bgbench("study", "load", *common, "--json", *args)
    assert load.returncode == 0, load.stderr
    rows = json.loads(load.stdout)["tables"][0]["rows"]
    assert len(rows) == 2 * 2 * 2 and all(r["rows/s"] > 0 for r in rows)
    queries = bgbench("study", "queries", *common, "--json", *args)
    assert queries.returncode == 0, queries.stderr
    [table, mapping] = json.loads(queries.stdout)["tables"]
    assert len(table["rows"]) == 1 + 2 * 7 and all(r["plan"] for r in table["rows"])
    assert [r["of"] for r in mapping["rows"]] == [6 * 10 * 100] * 7
    run = bgbench("run", *common, "--threads", "4", "--duration", "3", "--json", *args)
    assert run.returncode == 0, run.stderr
    r = json.loads(run.stdout)
    assert r["errors"] == 0 and r["reads"] > 0 and r["unpredictable_reads"] == 0
