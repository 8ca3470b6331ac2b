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

Each node's record in server.json ("nodes") holds its name (n1, n2 ...), address,
directory, command line, JMX port (`-Dcassandra.jmx.local.port`: 127.0.0.1 only, one free
port per node, for nodetool), pid (0: not running) and whether it is a member; "members"
is the membership at start. `spares` nodes are configured but not started (auto_bootstrap
on): bgbench/launchers/nodes.py starts them into the ring.

About 1 GB RSS per node; SIGTERM stops a node in ~6 s.
"""

import contextlib
import logging
import os
import signal
from pathlib import Path
from typing import Any, NamedTuple

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

# nodetool's logging: warnings only, on stderr (its answer is on stdout).
LOGBACK_TOOLS = """<configuration>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%-5level %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR"/></root>
</configuration>
"""


TOKENS_PER_NODE = 16


def member_tokens(index: int, members: int) -> str:
    """Member `index`'s tokens, interleaved with the others' evenly over Murmur3's ring."""
    step = 2**64 // (members * TOKENS_PER_NODE)
    return ",".join(str(-(2**63) + (k * members + index) * step) for k in range(TOKENS_PER_NODE))


def _commitlog(mode: str) -> str:
    if mode == "batch":  # each write synced before it is acknowledged
        return "commitlog_sync: batch"
    return "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms"


def _yaml(
    host: str,
    seeds: str,
    storage_port: int,
    cql_port: int,
    snitch: str,
    rf: int,
    commitlog: str,
    bootstrap: bool,
    tokens: str,
) -> str:
    # A member's tokens are given (initial_token): nodes started together would otherwise
    # allocate the same ones (each sees only the seed's), and two of three would share a
    # place in the ring. A spare that bootstraps allocates its own from the ring it joins.
    chosen = f'initial_token: "{tokens}"' if tokens else ""
    return f"""cluster_name: bgbench
num_tokens: {TOKENS_PER_NODE}
{chosen}
allocate_tokens_for_local_replication_factor: {rf}
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
auto_bootstrap: {"true" if bootstrap else "false"}
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
    spares: int = 0,
) -> dict[str, Any]:
    """`nodes` members started, and `spares` more nodes configured (auto_bootstrap on)
    that bgbench/launchers/nodes.py's `add` starts into the ring."""
    lib = fetch_jars("cassandra", VERSION)
    hosts = [f"127.0.0.{i + 1}" for i in range(nodes + spares)]
    storage_port = free_port(*hosts)
    while not all(bindable(h, storage_port + 1) for h in ["127.0.0.1", *hosts]):
        storage_port = free_port(*hosts)  # its ssl_storage_port, one above, must be free too
    cql_port = free_port(*hosts)
    while cql_port in (storage_port, storage_port + 1):
        cql_port = free_port(*hosts)
    taken = {storage_port, storage_port + 1, cql_port}
    (directory / "logback-tools.xml").parent.mkdir(parents=True, exist_ok=True)
    (directory / "logback-tools.xml").write_text(LOGBACK_TOOLS)
    records = []
    for i, host in enumerate(hosts):
        jmx_port = free_port()
        while jmx_port in taken:
            jmx_port = free_port()
        taken.add(jmx_port)
        dc = i + 1 if datacenters else 0
        config = NodeConfig(host, hosts[0], storage_port, cql_port, jmx_port, dc, commitlog)
        tokens = member_tokens(i, nodes) if i < nodes else ""
        records.append(_configure(directory, i, config, lib, heap, tokens))

    def ready(host: str, peers: int) -> None:
        wait_for(
            lambda: sees_peers(host, cql_port, peers),
            f"Cassandra node {host} (logs: {directory}/node*/cassandra.log)",
            180,
            alive=lambda: all(running(r["pid"]) for r in records if r["pid"]),
        )

    try:
        # The seed first: a node that starts before its seed answers cannot gossip and
        # exits. Then the others together (a fresh cluster with no data: no bootstrap).
        records[0]["pid"] = launch(records[0])
        ready(hosts[0], 0)
        for record in records[1:nodes]:
            record["pid"] = launch(record)
        for host in hosts[:nodes]:
            ready(host, nodes - 1)
    except BaseException:
        for record in records:
            if record["pid"]:
                stop_pid(record["pid"], 10)
        raise
    return {
        "server": "cassandra", "name": f"Cassandra {VERSION}", "hosts": hosts[:nodes],
        "port": cql_port, "storage_port": storage_port, "pids": pids_of(records),
        "dir": str(directory), "nodes": records, "members": [r["name"] for r in records[:nodes]],
        "datacenters": [f"dc{i + 1}" for i in range(nodes)] if datacenters else ["datacenter1"],
        "commitlog_sync": commitlog,
    }  # fmt: skip


class NodeConfig(NamedTuple):
    host: str
    seed: str
    storage_port: int
    cql_port: int
    jmx_port: int
    datacenter: int  # its own data centre dc<N>; 0: one data centre for all
    commitlog: str


def _configure(
    directory: Path, i: int, config: NodeConfig, lib: Path, heap: str, tokens: str
) -> dict[str, Any]:
    """The node's directory, configuration and command line: its record in server.json
    (a spare, with no tokens given, is not a member and bootstraps when added)."""
    spare = not tokens
    node = directory / f"node{i + 1}"
    node.mkdir(parents=True, exist_ok=True)
    if config.datacenter:
        snitch, rf = "GossipingPropertyFileSnitch", 1  # one replica per data centre
        (node / "cassandra-rackdc.properties").write_text(f"dc=dc{config.datacenter}\nrack=rack1\n")
    else:
        snitch, rf = "SimpleSnitch", 3
    seeds = f"{config.seed}:{config.storage_port}"
    yaml = _yaml(config.host, seeds, config.storage_port, config.cql_port, snitch, rf,
                 config.commitlog, bootstrap=spare, tokens=tokens)  # fmt: skip
    (node / "cassandra.yaml").write_text(yaml)
    (node / "jvm.options").write_text(JVM17)
    classpath = ":".join(str(j) for j in sorted(lib.glob("*.jar")))
    jamm = next(lib.glob("jamm-*.jar"))
    cmd = [
        java(), "@jvm.options", f"-javaagent:{jamm}", f"-Xmx{heap}", f"-Xms{heap}",
        "-XX:+UseG1GC", "-Xss512k",
        f"-Dcassandra.config=file://{node / 'cassandra.yaml'}",
        f"-Dcassandra-rackdc.properties=file://{node / 'cassandra-rackdc.properties'}",
        f"-Dcassandra.storagedir={node / 'data'}", f"-Dcassandra.logdir={node}",
        f"-Dcassandra.jmx.local.port={config.jmx_port}",
        "-Dcassandra-foreground=yes", "-Dcassandra.skip_wait_for_gossip_to_settle=0",
        "-Dcassandra.ring_delay_ms=1000", "-Dcassandra.consistent.rangemovement=false",
        "-cp", classpath, "org.apache.cassandra.service.CassandraDaemon",
    ]  # fmt: skip
    return {
        "name": f"n{i + 1}", "host": config.host, "dir": str(node), "command": cmd,
        "jmx_port": config.jmx_port, "pid": 0, "member": not spare, "paused": False,
    }  # fmt: skip


def launch(record: dict[str, Any]) -> int:
    """Start a node with its recorded command line (its log appended to); its pid."""
    keep_jmx_port_free(record)
    return spawn(record["command"], Path(record["dir"]), "cassandra.log", append=True)


def keep_jmx_port_free(record: dict[str, Any]) -> None:
    """Ports are picked when the cluster starts; a spare node starts minutes later, when any
    process may hold its JMX port (a client's ephemeral port): the JVM would exit at once.
    A taken port is replaced, in the record and its command line."""
    if bindable("127.0.0.1", record["jmx_port"]):
        return
    port, flag = free_port(), "-Dcassandra.jmx.local.port="
    record["command"] = [f"{flag}{port}" if a.startswith(flag) else a for a in record["command"]]
    record["jmx_port"] = port


def pids_of(records: list[dict[str, Any]]) -> list[int]:
    return [r["pid"] for r in records if r["pid"]]


def sees_peers(host: str, port: int, peers: int) -> bool:
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
    """Every node told at once (each takes seconds to stop), then each waited for."""
    for pid in info["pids"]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)  # a paused node cannot act on SIGTERM
            os.kill(pid, signal.SIGTERM)
    for pid in info["pids"]:
        stop_pid(pid, 20)
