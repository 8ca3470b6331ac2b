"""Scenarios on the local 3-node Cassandra cluster (one cluster for the whole file: it takes
minutes to start): a node killed and started again at ONE, QUORUM and ALL. Each run is
`bgbench run` with a scenario, checked through its phase figures, and checked for what
it left behind: no nft table of its process, no node stopped or dead. (A partition and
its heal are tested on PostgreSQL's replication: test_scenarios_replica.py.)"""

from pathlib import Path

import pytest

from bgbench.launchers.nodes import nodes_of
from tests.conftest import servers
from tests.e2e.scenario_helpers import left_behind, phases_by_label, run_scenario, settings_file

# The cluster and three runs come with the first test (its module fixtures): minutes.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

SECONDS = 30
KILL_AT, START_AT = 8, 16


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cassandra-scenario")
    try:
        info = servers.start("cassandra-cluster", directory)
        yield directory, info
    finally:
        servers.stop(directory)


def cassandra_store(info: dict, keyspace: str, level: str, timeout_s: float = 30) -> dict:
    return {"name": "cassandra", "options": {
        "hosts": info["hosts"], "port": info["port"], "keyspace": keyspace,
        "replication_factor": 3, "read_consistency": level, "write_consistency": level,
        "timeout_s": timeout_s,
    }}  # fmt: skip


def members_up(directory: Path) -> list[str]:
    return sorted(n.name for n in nodes_of(directory) if n.member and n.state == "up")


@pytest.fixture(scope="module")
def kill_and_start(cluster, tmp_path_factory) -> dict[str, dict]:
    """The same kill-and-restart of n2 at each consistency level, one run each."""
    directory, info = cluster
    scenario = [{"at": f"{KILL_AT}s", "do": "kill", "node": "n2"},
                {"at": f"{START_AT}s", "do": "start", "node": "n2"}]  # fmt: skip
    out = {}
    for level in ("ONE", "QUORUM", "ALL"):
        work = tmp_path_factory.mktemp(f"kill-{level}")
        store = cassandra_store(info, f"scen_{level.lower()}", level)
        path = settings_file(work / "s.yaml", store, scenario, [directory], SECONDS)
        result = run_scenario(path, work / "results")
        result["left_behind"] = left_behind(directory, result["pid"])
        result["members_up"] = members_up(directory)
        out[level] = result
    return out


@pytest.mark.parametrize("level", ["ONE", "QUORUM", "ALL"])
def test_a_killed_and_restarted_node_is_recorded_step_by_step(kill_and_start, level):
    r = kill_and_start[level]
    assert r["fault"] == ""
    kill, start = r["scenario"]["steps"]
    assert kill["ok"] and start["ok"], (kill, start)
    assert kill["started_s"] == pytest.approx(KILL_AT, abs=2.0)  # busy machine: late is fine
    assert start["started_s"] >= START_AT
    assert f"{kill['started_s']:.1f} s: kill n2 — " in r["stderr"]
    assert list(phases_by_label(r)) == ["baseline", "kill n2", "start n2"]
    assert r["left_behind"] == [] and r["members_up"] == ["n1", "n2", "n3"]


def test_one_and_quorum_keep_serving_while_all_loses_availability(kill_and_start):
    down = {level: phases_by_label(r)["kill n2"] for level, r in kill_and_start.items()}
    base = {level: phases_by_label(r)["baseline"] for level, r in kill_and_start.items()}
    for level in ("ONE", "QUORUM", "ALL"):
        assert base[level]["actions_per_s"] > 0, level  # every level served before the kill
    for level in ("ONE", "QUORUM"):  # one replica down of three: still served
        phase = down[level]
        assert phase["actions_per_s"] > 0.3 * base[level]["actions_per_s"], (level, phase)
        assert phase["unavailable_s"] < 0.5 * (phase["end_s"] - phase["start_s"]), (level, phase)
    phase = down["ALL"]  # every replica needed: nothing succeeds once n2 is gone
    assert phase["errors"] > 0
    assert phase["actions_per_s"] < 0.2 * base["ALL"]["actions_per_s"], phase
    assert phase["unavailable_s"] > 0.5 * (phase["end_s"] - phase["start_s"]), phase
    assert phase["unavailable_s"] > max(
        down["ONE"]["unavailable_s"], down["QUORUM"]["unavailable_s"]
    )
