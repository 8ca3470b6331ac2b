"""`bgbench run --workload ehr` end to end: real agent processes over gRPC on loopback,
SQLite underneath, the logs validated."""

import json
from functools import partial
from pathlib import Path

import pytest

from bgbench.coordinator.storage.results import ResultsStore
from tests import helpers
from tests.conftest import fresh_database

bgbench = partial(helpers.bgbench, timeout=240)


@pytest.fixture(scope="module")
def ehr_run(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("ehr")
    proc = bgbench(
        "run", "--workload", "ehr", "--store", "sqlite", "--threads", "8", "--duration", "10",
        "--results", str(tmp), "--json", "-p", f"store.options.path={tmp / 'ehr.sqlite'}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return {"result": json.loads(proc.stdout), "dir": tmp}


def test_run_prints_throughput_latency_per_operation_and_no_unpredictable_read(ehr_run):
    r = ehr_run["result"]
    assert r["threads"] == 8 and r["fault"] == "" and r["errors"] == 0
    assert r["actions"] > 0 and r["actions_per_s"] > 0
    per_action = {a["action"]: a for a in r["per_action"]}
    assert set(per_action) == {"READ", "WRITE"}
    for a in per_action.values():
        resp = a["response"]
        assert resp["count"] == a["count"] > 0
        assert 0 < resp["p50_ms"] <= resp["p95_ms"] <= resp["p99_ms"] <= resp["max_ms"]
        assert resp["mean_ms"] > 0
    assert 0.1 < per_action["WRITE"]["count"] / r["actions"] < 0.3  # readwrite: 80/20
    assert r["reads"] == per_action["READ"]["count"]  # every READ logged the count it saw
    assert r["unpredictable_reads"] == 0 and r["unpredictable_percent"] == 0
    assert r["by_item"] == {"patient result count": {"reads": r["reads"], "unpredictable": 0}}
    for agent in r["agents"]:
        assert agent["log_records_written"] == agent["log_records_read"] > 0


def test_the_run_is_recorded_as_the_ehr_workload(ehr_run):
    [rating] = ResultsStore(ehr_run["dir"]).ratings()
    assert rating["workload"] == "ehr"
    settings = json.loads(rating["workload_config_json"])
    assert settings["database"]["patients"] == 10_000  # the documented default
    assert settings["workload"]["mix"] == "readwrite"


def test_human_output_names_the_operations(tmp_path):
    proc = bgbench(
        "run", "--workload", "ehr", "--store", "sqlite", "--threads", "2", "--duration", "1",
        "--mix", "readonly", "--users", "2000", "--results", str(tmp_path),
        "-p", f"store.options.path={tmp_path / 'ehr.sqlite'}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Read a patient's most recent lab results" in proc.stdout
    assert "Insert a lab result" not in proc.stdout  # readonly
    assert "unpredictable reads 0.000%" in proc.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--mix", "mostlyreads"], "ehr.workload.mix"),
        (["-p", "recordcount=0"], "ehr.database.patients"),
        (["-p", "ehr.database.meanresults=25"], "meanresults"),
        (["-p", "ehr.workload.requestdistribution=latest"], "ehr.workload.requestdistribution"),
        (["--users", "1"], "ehr.database.patients"),  # two agents, one patient
        (["-p", "store.options.journal=WAL"], "store.options.journal"),
    ],
)
def test_bad_input_is_one_clear_line(args, needle, tmp_path):
    proc = bgbench("run", "--workload", "ehr", *args, "--results", str(tmp_path / "r"))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert not Path(tmp_path / "r").exists()  # nothing started


def server_args(store: str, request: pytest.FixtureRequest) -> tuple[list[str], str]:
    """The -p options reaching the store's test server, and what its description names."""
    if store == "postgres":
        dsn = fresh_database(request.getfixturevalue("postgres_server"))
        return ["-p", f"store.options.dsn={dsn}"], "PostgreSQL"
    if store == "mongodb":
        mongo = request.getfixturevalue("mongo_wire_server")
        return [
            "-p", f"store.options.uri=mongodb://127.0.0.1:{mongo['port']}",
            "-p", f"store.options.server_name={mongo['name']}",
        ], mongo["name"]  # fmt: skip
    cassandra = request.getfixturevalue("cassandra_server")
    return [
        "-p", f"store.options.hosts={','.join(cassandra['hosts'])}",
        "-p", f"store.options.port={cassandra['port']}",
        "-p", "store.options.keyspace=ehr_cli",
    ], "Cassandra 5.0.2 (1 node"  # fmt: skip


@pytest.mark.parametrize("store", ["postgres", "mongodb", "cassandra"])
def test_the_same_run_on_a_real_server(store, tmp_path, request):
    """`bgbench run --workload ehr --threads 8 --duration 10` on each server CI starts
    (MongoDB: the wire server, named so), 2,000 patients to load quickly."""
    args, named = server_args(store, request)
    proc = bgbench(
        "run", "--workload", "ehr", "--store", store, "--threads", "8", "--duration", "10",
        "--users", "2000", "--results", str(tmp_path), "--json", *args,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert named in r["store"]
    assert r["threads"] == 8 and r["fault"] == "" and r["errors"] == 0 and r["actions_per_s"] > 0
    per_action = {a["action"]: a for a in r["per_action"]}
    assert set(per_action) == {"READ", "WRITE"}
    for a in per_action.values():
        assert a["count"] > 0 and 0 < a["response"]["p50_ms"] <= a["response"]["p95_ms"]
    assert r["reads"] == per_action["READ"]["count"] > 0
    assert r["unpredictable_reads"] == 0
