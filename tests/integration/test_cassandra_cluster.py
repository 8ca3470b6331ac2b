"""The Cassandra binding on a real 3-node cluster (127.0.0.1, .2, .3) with replication
factor 3: every node holds the data, the consistency levels set in the options reach the
server, and a stopped node is survived at QUORUM and refused at ALL."""

import pytest
from cassandra import Unavailable
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import WhiteListRoundRobinPolicy

from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.registry import make_binding
from tests.conftest import servers

DB = BGDatabaseConfig(usercount=60, friendcountperuser=4, resourcecountperuser=2,
                      commentcountperresource=1)  # fmt: skip
PLAN = FragmentPlan((1.0,), 0.27)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cassandra3")
    try:
        yield servers.start("cassandra-cluster", directory)
    finally:
        servers.stop(directory)


def binding(cluster: dict, keyspace: str, level: str):
    return make_binding("bg", "cassandra", {
        "hosts": cluster["hosts"], "port": cluster["port"], "keyspace": keyspace,
        "replication_factor": 3, "read_consistency": level, "write_consistency": level,
    })  # fmt: skip


def rows_on(host: str, port: int, cql: str) -> int:
    """Rows one node answers from its own replica alone (consistency ONE, only that node)."""
    only = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]))
    c = Cluster([host], port=port, execution_profiles={EXEC_PROFILE_DEFAULT: only})
    try:
        return len(c.connect().execute(cql).all())
    finally:
        c.shutdown()


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
        with pytest.raises(Unavailable):  # ALL needs the stopped node
            everyone.connect().view_comments(member, rid)
        with pytest.raises(Unavailable):
            everyone.connect().post_comment(member, rid, 79, "refused")
    finally:
        quorum.close()
        everyone.close()
