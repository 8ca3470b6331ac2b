"""Cassandra 5.0.2 on loopback from Maven Central jars: one node, or a cluster of nodes on
127.0.0.1, 127.0.0.2, 127.0.0.3 ... (every 127/8 address is local, as ccm uses them).

Each node has its own directory (yaml, data, log). Ready means every node answers CQL and
sees all the others as peers.

`datacenters=True` makes each node its own data centre, dc1, dc2, dc3 ... (one rack each,
GossipingPropertyFileSnitch reading the node's cassandra-rackdc.properties): Klein et al.'s
three data centres, one node each, so NetworkTopologyStrategy and EACH_QUORUM have several
data centres to span. Otherwise one data centre (SimpleSnitch's datacenter1).
`commitlog="batch"` syncs the commit log before each write is acknowledged (the default,
periodic, every 10 s).

About 1 GB RSS per node; SIGTERM stops a node in ~6 s.
"""

import logging
from pathlib import Path
from typing import Any

from bgbench.launchers.procs import (
    bindable,
    fetch_jars,
    free_port,
    java,
    running,
    spawn,
    stop_pid,
    wait_for,
)

VERSION = "5.0.2"
# From upstream's conf/jvm17-server.options (JPMS openings and netty settings).
JVM17 = """
-Djdk.attach.allowAttachSelf=true
--add-exports java.base/jdk.internal.misc=ALL-UNNAMED
--add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
--add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
--add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
--add-exports java.sql/java.sql=ALL-UNNAMED
--add-exports java.base/java.lang.ref=ALL-UNNAMED
--add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
--add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
--add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
--add-opens java.base/java.lang.module=ALL-UNNAMED
--add-opens java.base/jdk.internal.loader=ALL-UNNAMED
--add-opens java.base/jdk.internal.ref=ALL-UNNAMED
--add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
--add-opens java.base/jdk.internal.math=ALL-UNNAMED
--add-opens java.base/jdk.internal.module=ALL-UNNAMED
--add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
--add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
--add-opens java.base/sun.nio.ch=ALL-UNNAMED
--add-opens java.base/java.io=ALL-UNNAMED
--add-opens java.base/java.lang.reflect=ALL-UNNAMED
--add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
--add-opens java.base/java.lang=ALL-UNNAMED
--add-opens java.base/java.util=ALL-UNNAMED
-Dio.netty.tryReflectionSetAccessible=true
-Dio.netty.allocator.useCacheForAllThreads=true
-Dio.netty.allocator.maxOrder=11
"""


def _commitlog(mode: str) -> str:
    if mode == "batch":  # each write synced before it is acknowledged
        return "commitlog_sync: batch"
    return "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms"


def _yaml(
    host: str, seeds: str, storage_port: int, cql_port: int, snitch: str, rf: int, commitlog: str
) -> str:
    return f"""cluster_name: bgbench
num_tokens: 16
allocate_tokens_for_local_replication_factor: {rf}
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
auto_bootstrap: false
auto_snapshot: false
{_commitlog(commitlog)}
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "{seeds}"
listen_address: {host}
rpc_address: {host}
storage_port: {storage_port}
ssl_storage_port: {storage_port + 1}
start_native_transport: true
native_transport_port: {cql_port}
endpoint_snitch: {snitch}
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
"""


def start(
    directory: Path,
    nodes: int = 1,
    heap: str = "1g",
    datacenters: bool = False,
    commitlog: str = "periodic",
) -> dict[str, Any]:
    lib = fetch_jars("cassandra", VERSION)
    hosts = [f"127.0.0.{i + 1}" for i in range(nodes)]
    storage_port = free_port(*hosts)
    while not all(bindable(h, storage_port + 1) for h in ["127.0.0.1", *hosts]):
        storage_port = free_port(*hosts)  # its ssl_storage_port, one above, must be free too
    cql_port = free_port(*hosts)
    while cql_port in (storage_port, storage_port + 1):
        cql_port = free_port(*hosts)
    seeds = f"{hosts[0]}:{storage_port}"
    classpath = ":".join(str(j) for j in sorted(lib.glob("*.jar")))
    jamm = next(lib.glob("jamm-*.jar"))
    pids: list[int] = []

    def launch(i: int, host: str) -> None:
        node = directory / f"node{i + 1}"
        node.mkdir(parents=True, exist_ok=True)
        if datacenters:
            snitch, rf = "GossipingPropertyFileSnitch", 1  # one replica per data centre
            (node / "cassandra-rackdc.properties").write_text(f"dc=dc{i + 1}\nrack=rack1\n")
        else:
            snitch, rf = "SimpleSnitch", 3
        yaml = _yaml(host, seeds, storage_port, cql_port, snitch, rf, commitlog)
        (node / "cassandra.yaml").write_text(yaml)
        (node / "jvm.options").write_text(JVM17)
        cmd = [
            java(), "@jvm.options", f"-javaagent:{jamm}", f"-Xmx{heap}", f"-Xms{heap}",
            "-XX:+UseG1GC", "-Xss512k",
            f"-Dcassandra.config=file://{node / 'cassandra.yaml'}",
            f"-Dcassandra-rackdc.properties=file://{node / 'cassandra-rackdc.properties'}",
            f"-Dcassandra.storagedir={node / 'data'}", f"-Dcassandra.logdir={node}",
            "-Dcassandra-foreground=yes", "-Dcassandra.skip_wait_for_gossip_to_settle=0",
            "-Dcassandra.ring_delay_ms=1000", "-Dcassandra.consistent.rangemovement=false",
            "-cp", classpath, "org.apache.cassandra.service.CassandraDaemon",
        ]  # fmt: skip
        pids.append(spawn(cmd, node, "cassandra.log"))

    def ready(host: str, peers: int) -> None:
        wait_for(
            lambda: _sees_peers(host, cql_port, peers),
            f"Cassandra node {host} (logs: {directory}/node*/cassandra.log)",
            180,
            alive=lambda: all(running(p) for p in pids),
        )

    try:
        # The seed first: a node that starts before its seed answers cannot gossip and
        # exits. Then the others together (a fresh cluster with no data: no bootstrap).
        launch(0, hosts[0])
        ready(hosts[0], 0)
        for i, host in enumerate(hosts[1:], start=1):
            launch(i, host)
        for host in hosts:
            ready(host, nodes - 1)
    except BaseException:
        for pid in pids:
            stop_pid(pid, 10)
        raise
    return {
        "server": "cassandra", "name": f"Cassandra {VERSION}", "hosts": hosts,
        "port": cql_port, "pids": pids, "dir": str(directory),
        "datacenters": [f"dc{i + 1}" for i in range(nodes)] if datacenters else ["datacenter1"],
        "commitlog_sync": commitlog,
    }  # fmt: skip


def _sees_peers(host: str, port: int, peers: int) -> bool:
    """A functional probe: the node answers CQL and knows every other node as up."""
    try:
        from cassandra import DriverException
        from cassandra.cluster import (
            EXEC_PROFILE_DEFAULT,
            Cluster,
            ExecutionProfile,
            NoHostAvailable,
        )
        from cassandra.policies import WhiteListRoundRobinPolicy
    except ImportError:
        raise SystemExit(
            "the Cassandra probe needs cassandra-driver: run from bgbench's venv"
        ) from None

    logging.getLogger("cassandra").setLevel(logging.CRITICAL)  # refusals while it starts
    try:
        only = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]))
        cluster = Cluster(
            [host], port=port, execution_profiles={EXEC_PROFILE_DEFAULT: only},
            connect_timeout=2, control_connection_timeout=2, protocol_version=5,
        )  # fmt: skip
        try:
            session = cluster.connect()
            session.execute("SELECT release_version FROM system.local")
            known = session.execute("SELECT peer FROM system.peers_v2").all()
            return len(known) >= peers
        finally:
            cluster.shutdown()
    except (NoHostAvailable, DriverException, OSError):
        return False


def stop(info: dict[str, Any]) -> None:
    for pid in info["pids"]:
        stop_pid(pid, 20)
