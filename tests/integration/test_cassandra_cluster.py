"""The Cassandra bindings on a real 3-node cluster (127.0.0.1, .2, .3), each node its own
data centre (dc1, dc2, dc3), as Klein et al.'s three data centres.

BG's binding with SimpleStrategy, replication factor 3: every node holds the data, the
consistency levels set in the options reach the server, and a stopped node is survived at
QUORUM and refused at ALL. EHR's with NetworkTopologyStrategy, one replica per data
centre: an EACH_QUORUM write reaches every data centre, and with one of them down is
refused while ONE writes and LOCAL_QUORUM reads in dc1 go on.

Tests needing every node come first in the file; those that stop one stop it themselves."""

import pytest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import WhiteListRoundRobinPolicy

from bgbench.sdk import blocking_connection
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.ehr.generator import new_result
from bgbench.workloads.registry import make_binding
from tests.conftest import servers
from tests.integration.test_ehr_stores import (
    UNAVAILABLE,
    K,
    one_fragment_loaded,
    with_count,
)

DB = BGDatabaseConfig(usercount=60, friendcountperuser=4, resourcecountperuser=2,
                      commentcountperresource=1)  # fmt: skip
PLAN = FragmentPlan((1.0,), 0.27)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cassandra3")
    try:
        yield servers.start("cassandra-dcs", directory)
    finally:
        servers.stop(directory)


def binding(cluster: dict, keyspace: str, level: str):
    return make_binding("bg", "cassandra", {
        "hosts": cluster["hosts"], "port": cluster["port"], "keyspace": keyspace,
        "replication_factor": 3, "read_consistency": level, "write_consistency": level,
    })  # fmt: skip


def answer_of(host: str, port: int, cql: str) -> list:
    """What one node answers from its own replica alone (consistency ONE, only that node)."""
    only = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]))
    c = Cluster([host], port=port, execution_profiles={EXEC_PROFILE_DEFAULT: only})
    try:
        return c.connect().execute(cql).all()
    finally:
        c.shutdown()


def rows_on(host: str, port: int, cql: str) -> int:
    return len(answer_of(host, port, cql))


def ehr_binding(cluster: dict, keyspace: str, **options: object):
    return make_binding("ehr", "cassandra", {
        "hosts": cluster["hosts"], "port": cluster["port"], "keyspace": keyspace,
        "datacenters": "dc1:1,dc2:1,dc3:1", **options,
    })  # fmt: skip


def test_the_nodes_are_three_data_centres(cluster):
    assert cluster["datacenters"] == ["dc1", "dc2", "dc3"]
    for host, dc in zip(cluster["hosts"], cluster["datacenters"], strict=True):
        [(seen,)] = answer_of(host, cluster["port"], "SELECT data_center FROM system.local")
        assert seen == dc


@pytest.fixture(scope="module")
def ehr3(cluster):
    """Keyspace ehr3 created and loaded (strong) while every node runs: DDL with a node
    down times out."""
    strong = ehr_binding(cluster, "ehr3")
    try:
        return one_fragment_loaded(strong)
    finally:
        strong.close()


def test_an_ehr_write_at_each_quorum_reaches_every_data_centre(cluster, ehr3):
    f = ehr3
    strong = ehr_binding(cluster, "ehr3")
    # strong, coordinated anywhere: a LOCAL_QUORUM read in any data centre sees what an
    # EACH_QUORUM write acknowledged (ONE/ONE spread so may not: the benchmark shows it)
    spread = ehr_binding(cluster, "ehr3", coordinators="every_dc")
    try:
        strong.use_schema(f.db)
        assert "(3 nodes, RF dc1 1, dc2 1, dc3 1, reads LOCAL_QUORUM, writes EACH_QUORUM)" in (
            strong.describe()
        )
        spread.use_schema(f.db)
        assert "reads LOCAL_QUORUM, writes EACH_QUORUM, every node coordinates" in (
            spread.describe()
        )
        p = with_count(f, 7)
        c, anywhere = blocking_connection(strong), blocking_connection(spread)
        try:
            for i in range(6):  # round robin: each node coordinates reads and writes
                row = new_result(f.keys.inserted(f.index, i), p, 0.25, 10**13 + i)
                (c if i % 2 else anywhere).insert_result(row)
                rows, count = anywhere.recent_results(p, K)
                assert count == 8 + i and rows[0] == row
        finally:
            c.close()
            anywhere.close()
        for host in cluster["hosts"]:  # each replica alone, at ONE, has every write
            assert rows_on(host, cluster["port"],
                           f"SELECT id FROM ehr3.results WHERE patient = {p}") == 13  # fmt: skip
    finally:
        strong.close()
        spread.close()


def test_every_node_holds_a_replica_and_a_stopped_node_is_survived_at_quorum(cluster):
    fragment = Fragment(DB, PLAN, 0)
    b = binding(cluster, "rf3", "QUORUM")
    b.create_schema(DB)
    b.load_fragment(fragment)
    assert b.describe().startswith("Cassandra 5.0.2 (3 nodes, RF 3, reads QUORUM")
    conn = b.connect()
    member = int(fragment.members[0])
    conn.post_comment(member, int(fragment.resources[0, 0]), 77, "written at QUORUM")
    b.close()
    for host in cluster["hosts"]:  # each node alone has every member's partition
        assert rows_on(host, cluster["port"], "SELECT DISTINCT mid FROM rf3.member") == 60

    servers.stop_pid(cluster["pids"][2], 20)  # 127.0.0.3 stops
    quorum, everyone = binding(cluster, "rf3", "QUORUM"), binding(cluster, "rf3", "ALL")
    try:
        quorum.create_schema(DB)
        everyone.create_schema(DB)
        conn = quorum.connect()
        rid = int(fragment.resources[0, 0])
        assert 77 in {c.mid for c in conn.view_comments(member, rid)}
        conn.post_comment(member, rid, 78, "two of three replicas suffice")
        with pytest.raises(UNAVAILABLE, match="consistency level ALL"):  # needs the stopped node
            everyone.connect().view_comments(member, rid)
        with pytest.raises(UNAVAILABLE, match="consistency level ALL"):
            everyone.connect().post_comment(member, rid, 79, "refused")
    finally:
        quorum.close()
        everyone.close()


def test_with_a_data_centre_down_each_quorum_is_refused_and_one_goes_on(cluster, ehr3):
    f = ehr3
    servers.stop_pid(cluster["pids"][2], 20)  # dc3 (127.0.0.3) stops, if not stopped yet
    strong = ehr_binding(cluster, "ehr3")
    eventual = ehr_binding(cluster, "ehr3", consistency="eventual")
    try:
        strong.use_schema(f.db)
        eventual.use_schema(f.db)
        p = with_count(f, 1)  # a patient no other test writes to
        fresh = [new_result(f.keys.inserted(f.index, 10 + i), p, 0.5, 10**13 + i) for i in (0, 1)]
        c, e = blocking_connection(strong), blocking_connection(eventual)
        try:
            with pytest.raises(UNAVAILABLE, match="EACH_QUORUM"):
                c.insert_result(fresh[0])
            e.insert_result(fresh[1])  # ONE: dc1 acknowledges alone
            rows, count = c.recent_results(p, K)  # LOCAL_QUORUM: dc1's replica suffices
            assert count == 2 and rows[0] == fresh[1]  # the refused write was never sent
        finally:
            c.close()
            e.close()
    finally:
        strong.close()
        eventual.close()
