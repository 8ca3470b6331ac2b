"""`bgbench run --workload micro` and `--workload auction` on the NoSQL stores' real
servers (entity groups over HBase, the MongoDB-wire server and Cassandra:
workloads/{micro,auction}/stores/groupkv.py), through real agents: every interaction runs
and the logs validate clean; under heavy conflict the compare-and-set aborts as
conflicts, retried, and still validates clean."""

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests import helpers
from tests.conftest import servers

bgbench = partial(helpers.bgbench, timeout=300)
FIXTURES = {
    "hbase": "hbase_server",
    "mongodb": "mongo_wire_server",
    "cassandra": "cassandra_server",
}
HEAVY = ("--mix", "conflict", "-p", "sharedgroups=2", "-p", "shareditems=8")


def store_args(store: str, request: pytest.FixtureRequest) -> list[str]:
    options = servers.store_options(request.getfixturevalue(FIXTURES[store]))
    args = []
    for key, value in options.items():
        shown = ",".join(value) if isinstance(value, list) else value
        args += ["-p", f"store.options.{key}={shown}"]
    return args


def micro_run(
    tmp: Path, store: str, request: pytest.FixtureRequest, *args: str, workload: str = "micro"
) -> dict[str, Any]:
    proc = bgbench(
        "run", "--workload", workload, "--store", store, "--threads", "4", "--duration", "3",
        "--users", "200" if workload == "micro" else "60", "--results", str(tmp / "results"),
        "--json", *store_args(store, request), *args,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    assert result["fault"] == "", result["fault"]
    return result


@pytest.mark.parametrize("store", ["mongodb", "hbase", "cassandra"])
def test_micro_runs_every_interaction_and_validates_clean(tmp_path, request, store):
    r = micro_run(tmp_path, store, request)
    assert "entity groups" in r["store"]
    assert r["errors"] == 0 and r["actions"] > 0
    assert len(r["per_action"]) == 8 and all(a["count"] > 0 for a in r["per_action"])
    assert r["reads"] > 0 and r["unpredictable_reads"] == 0


@pytest.mark.parametrize("store", ["mongodb", "hbase", "cassandra"])
def test_auction_runs_and_validates_clean(tmp_path, request, store):
    r = micro_run(tmp_path, store, request, workload="auction")
    assert r["errors"] == 0
    per_action = {a["action"]: a for a in r["per_action"]}
    assert per_action["STORE_BID"]["counts"]["commits"] > 0
    assert r["reads"] > 0 and r["unpredictable_reads"] == 0
    assert r["by_item"]["auction item max bid"]["reads"] > 0


def test_micro_under_heavy_conflict_validates_clean(tmp_path, request):
    r = micro_run(tmp_path, "mongodb", request, *HEAVY)
    (update,) = r["per_action"]
    assert update["counts"]["commits"] > 0
    assert r["reads"] > 0 and r["unpredictable_reads"] == 0


def test_pessimistic_is_refused_in_one_line(tmp_path, request):
    proc = bgbench(
        "run", "--workload", "micro", "--store", "mongodb", "--duration", "1",
        "--results", str(tmp_path), *store_args("mongodb", request),
        "-p", "store.options.concurrency_control=pessimistic",
    )  # fmt: skip
    assert proc.returncode == 2
    assert "MongoDB offers only optimistic" in proc.stderr
