"""PostgreSQL with a streaming hot standby under the `high` mix's writes, the same
scenario twice: replication cut from the standby (nftables on the primary's
replication-only address) for 8 s, then healed. With the runs' reads on the standby the
validator counts unpredictable reads, with their lag, and far more of them, far staler,
while the standby is cut off; with the reads on the primary there are none, in any
phase."""

import pytest

from bgbench.launchers import postgres_replica
from tests.conftest import servers
from tests.e2e.scenario_helpers import left_behind, run_scenario, settings_file

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SCENARIO = [
    {"at": "8s", "do": "partition", "node": "standby", "from": "others"},
    {"at": "16s", "do": "heal", "node": "standby"},
]


@pytest.fixture(scope="module")
def replica(tmp_path_factory):
    directory = tmp_path_factory.mktemp("postgres-replica-scenario")
    try:
        yield directory, servers.start("postgres-replica", directory)
    finally:
        servers.stop(directory)


@pytest.fixture(scope="module")
def runs(replica, tmp_path_factory) -> dict[str, dict]:
    directory, info = replica
    out = {}
    for read_from in ("replica", "primary"):
        work = tmp_path_factory.mktemp(f"reads-{read_from}")
        options = {**postgres_replica.store_options(info), "read_from": read_from}
        path = settings_file(work / "s.yaml", {"name": "postgres", "options": options},
                             SCENARIO, [directory], 26)  # fmt: skip
        result = run_scenario(path, work / "results", args=("-p", "mix=high"))
        result["left_behind"] = left_behind(directory, result["pid"])
        out[read_from] = result
    return out


def test_reads_from_the_standby_are_unpredictable_and_staler_while_it_is_cut_off(runs):
    r = runs["replica"]
    assert r["fault"] == "" and r["errors"] == 0
    partition, heal = r["scenario"]["steps"]
    assert partition["ok"] and heal["ok"], (partition, heal)
    phases = r["scenario"]["phases"]
    base, cut = phases[0], phases[1]
    assert cut["label"].startswith("partition standby"), cut
    assert cut["reads"] > 0 and cut["unpredictable"] > 0
    assert cut["unpredictable_percent"] > base["unpredictable_percent"], (base, cut)
    assert cut["lag_max_ms"] > max(1000.0, base["lag_max_ms"]), (base, cut)
    assert r["unpredictable_reads"] == sum(p["unpredictable"] for p in phases)
    assert r["left_behind"] == [] and r["tables_left"] == []


def test_reads_from_the_primary_are_never_unpredictable(runs):
    r = runs["primary"]
    assert r["fault"] == "" and r["errors"] == 0 and r["reads"] > 0
    for phase in r["scenario"]["phases"]:
        assert phase["reads"] > 0 and phase["unpredictable"] == 0, phase
    assert r["left_behind"] == [] and r["tables_left"] == []
