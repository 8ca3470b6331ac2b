"""Node control (bgbench/launchers/nodes.py) on real servers: one 3-node Cassandra cluster
with its spare n4 (started once for the module: a node restart takes ~25 s, a bootstrap
~45 s), a PostgreSQL and a memcached of their own (the session's servers stay untouched).

Cassandra: a killed node started again serves CQL and is up for its peers (a write at ALL
succeeds again); a paused node is stopped in /proc and runs again on resume; n4 added
bootstraps into the ring (4 nodes, tokens of its own) and removed leaves it (3 again);
restore() after a kill and a pause brings the membership back. The tests share the
cluster and run in this file's order; each leaves it with n1..n3 up."""

import json
import subprocess
import sys
import uuid

import psycopg
import pytest
from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import WhiteListRoundRobinPolicy
from cassandra.query import SimpleStatement
from pymemcache.client.base import Client as Memcache

from bgbench.launchers import nodes
from bgbench.launchers.nodes import NodeActionError
from bgbench.launchers.procs import process_state, running
from tests.conftest import ROOT, servers
from tests.helpers import wait_until

ACTION_S = 300.0  # a bound, not an expectation: a busy machine is slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("nodes-cassandra")
    try:
        servers.start("cassandra-cluster", directory)
        yield directory
    finally:
        servers.stop(directory)


def state(directory) -> dict:
    return json.loads((directory / "server.json").read_text())


def record(directory, name: str) -> dict:
    return next(r for r in state(directory)["nodes"] if r["name"] == name)


def session_on(directory, host: str):
    only = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]))
    c = Cluster([host], port=state(directory)["port"], protocol_version=5,
                execution_profiles={EXEC_PROFILE_DEFAULT: only})  # fmt: skip
    return c, c.connect()


def peers_seen_by(directory, host: str) -> set[str]:
    c, session = session_on(directory, host)
    try:
        return {str(row.peer) for row in session.execute("SELECT peer FROM system.peers")}
    finally:
        c.shutdown()


def write_at_all(directory) -> None:
    """A write every replica (RF 3) must acknowledge: it fails while one is down."""
    c, session = session_on(directory, "127.0.0.1")
    try:
        session.execute(
            "CREATE KEYSPACE IF NOT EXISTS nodes_test WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 3}"
        )
        session.execute("CREATE TABLE IF NOT EXISTS nodes_test.t (k text PRIMARY KEY, v int)")
        insert = SimpleStatement(
            "INSERT INTO nodes_test.t (k, v) VALUES (%s, 1)",
            consistency_level=ConsistencyLevel.ALL,
        )
        session.execute(insert, (uuid.uuid4().hex,))
    finally:
        c.shutdown()


def all_acknowledge(directory) -> bool:
    try:
        write_at_all(directory)
        return True
    except Exception as e:  # Unavailable or a timeout while a replica is down
        REFUSALS.append(f"{type(e).__name__}: {str(e)[:300]}")
        return False


REFUSALS: list[str] = []


def wait_for_writes_at_all(directory, what: str) -> None:
    REFUSALS.clear()
    try:
        wait_until(lambda: all_acknowledge(directory), what, 120, poll_s=0.5)
    except AssertionError as e:
        raise AssertionError(f"{e}; the last refusal: {REFUSALS[-1:]}") from None


def test_nodes_of_a_cluster_with_its_spare(cluster):
    found = {n.name: n for n in nodes.nodes_of(cluster)}
    assert sorted(found) == ["n1", "n2", "n3", "n4"]
    assert [found[n].member for n in ("n1", "n2", "n3", "n4")] == [True, True, True, False]
    assert found["n4"].state == "down" and found["n2"].state == "up"
    info = state(cluster)
    assert found["n2"].address == "127.0.0.2"
    assert found["n2"].peer_endpoints == (nodes.Endpoint("127.0.0.2", info["storage_port"]),)
    assert found["n2"].client_endpoints == (nodes.Endpoint("127.0.0.2", info["port"]),)
    assert "add" in found["n4"].actions and "remove" not in found["n1"].actions
    ports = {r["jmx_port"] for r in info["nodes"]}
    assert len(ports) == 4  # one JMX port per node
    n2 = record(cluster, "n2")
    assert f"-Dcassandra.jmx.local.port={n2['jmx_port']}" in n2["command"]
    listed = subprocess.run(
        [sys.executable, str(ROOT / "deploy/local/servers.py"), "nodes", str(cluster)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[3].startswith("n4  down  not a member")


def test_a_paused_node_is_stopped_until_resumed(cluster):
    pid = record(cluster, "n3")["pid"]
    assert nodes.act(cluster, "n3", "pause", ACTION_S) == f"paused n3 (pid {pid})"
    assert process_state(pid) == "T"
    assert record(cluster, "n3")["paused"] is True
    assert {n.name: n.state for n in nodes.nodes_of(cluster)}["n3"] == "paused"
    nodes.act(cluster, "n3", "resume", ACTION_S)
    assert process_state(pid) not in ("T", "")
    assert record(cluster, "n3")["paused"] is False
    wait_for_writes_at_all(cluster, "a write at ALL after n3 resumed")


def test_a_killed_node_started_again_serves_and_is_up_for_its_peers(cluster):
    old = record(cluster, "n2")["pid"]
    assert nodes.act(cluster, "n2", "kill", ACTION_S) == f"killed n2 (pid {old})"
    assert not running(old)
    assert record(cluster, "n2")["pid"] == 0 and old not in state(cluster)["pids"]
    with pytest.raises(NodeActionError, match="n2 is not running"):
        nodes.act(cluster, "n2", "pause", ACTION_S)
    line = nodes.act(cluster, "n2", "start", ACTION_S)
    new = record(cluster, "n2")["pid"]
    assert line == f"started n2 (pid {new})" and new != old and running(new)
    assert new in state(cluster)["pids"]
    assert peers_seen_by(cluster, "127.0.0.2") == {"127.0.0.1", "127.0.0.3"}
    wait_for_writes_at_all(cluster, "a write at ALL with n2 back")


def test_n4_added_joins_the_ring_and_removed_leaves_it(cluster):
    line = nodes.act(cluster, "n4", "add", ACTION_S)
    assert line.startswith("added n4") and record(cluster, "n4")["member"] is True
    assert peers_seen_by(cluster, "127.0.0.1") == {"127.0.0.2", "127.0.0.3", "127.0.0.4"}
    write_at_all(cluster)  # the keyspace exists before the driver below reads the schema
    c, session = session_on(cluster, "127.0.0.4")
    try:  # it owns ranges of its own: tokens, and it is a replica of some keys
        assert session.execute("SELECT tokens FROM system.local").one().tokens
        token_map = c.metadata.token_map
        replicas = {
            str(h.address)
            for k in range(64)
            for h in token_map.get_replicas("nodes_test", token_map.token_class.from_key(
                str(k).encode()))
        }  # fmt: skip
        assert "127.0.0.4" in replicas
    finally:
        c.shutdown()
    pid = record(cluster, "n4")["pid"]
    assert nodes.act(cluster, "n4", "remove", ACTION_S) == "decommissioned n4"
    assert not running(pid) and record(cluster, "n4")["member"] is False
    assert peers_seen_by(cluster, "127.0.0.1") == {"127.0.0.2", "127.0.0.3"}
    with pytest.raises(NodeActionError, match="not a member"):
        nodes.act(cluster, "n4", "start", ACTION_S)


def test_restore_brings_the_membership_back(cluster):
    nodes.act(cluster, "n3", "kill", ACTION_S)
    nodes.act(cluster, "n2", "pause", ACTION_S)
    assert not all_acknowledge(cluster)
    done = nodes.restore(cluster, ACTION_S)
    assert [line.split()[0] for line in done] == ["resumed", "started"]
    assert {n.name: n.state for n in nodes.nodes_of(cluster)} == {
        "n1": "up", "n2": "up", "n3": "up", "n4": "down"}  # fmt: skip
    wait_for_writes_at_all(cluster, "a write at ALL after restore")
    assert nodes.restore(cluster, ACTION_S) == []  # nothing left to undo


def test_unknown_nodes_and_actions_are_one_line(cluster):
    with pytest.raises(NodeActionError, match=r"^no node n9 in .*known nodes n1, n2, n3, n4$"):
        nodes.act(cluster, "n9", "kill", ACTION_S)
    with pytest.raises(NodeActionError, match=r"^n1 \(cassandra-cluster\) cannot remove: it can"):
        nodes.act(cluster, "n1", "remove", ACTION_S)
    cli = subprocess.run(
        [sys.executable, str(ROOT / "deploy/local/servers.py"), "node", str(cluster), "n2",
         "explode"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert cli.returncode != 0
    assert cli.stderr.strip().splitlines() == [
        "n2 (cassandra-cluster) cannot explode: it can "
        "add, kill, pause, remove, restart, resume, start, stop"
    ]


@pytest.fixture
def postgres(tmp_path):
    try:
        yield tmp_path, servers.start("postgres", tmp_path)
    finally:
        servers.stop(tmp_path)


def pg_answers(port: int) -> bool:
    try:
        dsn = f"host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=3"
        with psycopg.connect(dsn) as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)
    except psycopg.Error:
        return False


def test_postgres_node_kill_start_pause_resume_restore(postgres):
    directory, info = postgres
    pid = info["pid"]
    assert [n.name for n in nodes.nodes_of(directory)] == ["postgres"]
    assert nodes.act(directory, "postgres", "kill", ACTION_S) == f"killed postgres (pid {pid})"
    assert not running(pid) and not pg_answers(info["port"])
    assert nodes.act(directory, "postgres", "start", ACTION_S).startswith("started postgres")
    assert pg_answers(info["port"])
    pid = state(directory)["pid"]
    nodes.act(directory, "postgres", "pause", ACTION_S)
    assert process_state(pid) == "T"
    assert nodes.restore(directory, ACTION_S) == [f"resumed postgres (pid {pid})"]
    assert process_state(pid) not in ("T", "") and pg_answers(info["port"])
    nodes.act(directory, "postgres", "stop", ACTION_S)
    assert nodes.nodes_of(directory)[0].state == "down"
    assert nodes.restore(directory, ACTION_S)[0].startswith("started postgres")
    assert pg_answers(info["port"])
    with pytest.raises(NodeActionError, match=r"postgres .* cannot restart-cache"):
        nodes.act(directory, "postgres", "restart-cache", ACTION_S)


@pytest.fixture
def memcached(tmp_path):
    try:
        yield tmp_path, servers.start("memcached", tmp_path)
    finally:
        servers.stop(tmp_path)


def test_memcached_restart_cache_keeps_the_port_and_empties_it(memcached):
    directory, info = memcached
    client = Memcache(("127.0.0.1", info["port"]), connect_timeout=2, timeout=2)
    client.set("k", b"v")
    assert client.get("k") == b"v"
    line = nodes.act(directory, "cache", "restart-cache", ACTION_S)
    assert line.endswith(f"on port {info['port']}") and state(directory)["pid"] != info["pid"]
    client.close()
    assert client.get("k") is None  # the same port, an empty cache
    pid = state(directory)["pid"]
    nodes.act(directory, "cache", "pause", ACTION_S)
    assert process_state(pid) == "T"
    nodes.act(directory, "cache", "resume", ACTION_S)
    client.set("k", b"w")
    assert client.get("k") == b"w"
    with pytest.raises(NodeActionError, match=r"no node postgres .*known nodes cache$"):
        nodes.act(directory, "postgres", "kill", ACTION_S)
