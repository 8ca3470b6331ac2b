"""Start, health-check and stop real servers on loopback, each with its data in a directory
of its own, for tests, CI, users and campaigns (coordinator/campaign/servers.py). Only
processes recorded here are ever stopped. From a checkout, deploy/local/servers.py runs
this without bgbench installed; installed, `python -m bgbench.launchers.servers` (and
`python -m bgbench.launchers.nodes` for the node commands).

    python deploy/local/servers.py start postgres DIR   # prints {"port": ..., "pid": ...}
    python deploy/local/servers.py start postgres DIR --cpus 0  # confined to CPU 0
    python deploy/local/servers.py start memcached DIR
    python deploy/local/servers.py start mongo-wire DIR  # SecantusDB (pip), no mongod here
    python deploy/local/servers.py start cassandra DIR   # one node (Maven Central jars)
    python deploy/local/servers.py start cassandra-cluster DIR  # 127.0.0.1, .2 and .3
    python deploy/local/servers.py start cassandra-dcs DIR  # the same, 3 data centres
    python deploy/local/servers.py start cassandra-batch DIR  # one node, commit log batch
    python deploy/local/servers.py start hbase DIR       # standalone + Thrift (happybase)
    python deploy/local/servers.py start node-exporter DIR  # Prometheus node_exporter
    python deploy/local/servers.py start postgres-replica DIR  # primary + hot standby
    python deploy/local/servers.py start mysql DIR       # MariaDB (Debian's mariadb-server)
    python deploy/local/servers.py start postgres-replica-delayed DIR  # standby 300 ms behind
    python deploy/local/servers.py stop DIR
    python deploy/local/servers.py nodes DIR             # its nodes, one line each
    python deploy/local/servers.py restore DIR           # the nodes as they were at start
    python deploy/local/servers.py node DIR n2 kill      # stop start restart pause resume
                                                         # add remove restart-cache
    python deploy/local/servers.py fetch cassandra hbase  # only fetch (and cache) the jars

Installs what is missing from Debian's packages (as root). PostgreSQL refuses to run as
root: it is initialised and started as user postgres. memcached runs in the foreground
with its PID recorded (its -d -P pid file is unreliable once it drops privileges).
Cassandra and HBase run from jars fetched once from Maven Central (bgbench/launchers/jars/,
cached in ~/.cache/bgbench/jars) on JDK 17. Standard library only, except that the
functional readiness probes of Cassandra and HBase use the drivers bgbench installs.
"""

import importlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bgbench.launchers import cassandra_server, hbase_server, mysql_server, node_exporter
from bgbench.launchers.procs import (
    apt,
    fetch_jars,
    free_port,
    port_open,
    running,
    signal_tree,
    stop_pid,
    tcp_answers,
    wait_for,
)

PG_BIN = Path("/usr/lib/postgresql/15/bin")
STATE = "server.json"
OWNER = "bgbench-owner"  # in a cluster made in postgres's home: the directory it serves


def start_postgres(
    directory: Path, port: int | None = None, cpus: set[int] | None = None
) -> dict[str, Any]:
    """PostgreSQL 15 on 127.0.0.1; with `cpus`, confined to those CPUs (the postmaster's
    affinity, set before it starts anything, which every backend it forks inherits)."""
    if not (PG_BIN / "initdb").exists():
        apt("postgresql")
    port = port or free_port()
    directory.mkdir(parents=True, exist_ok=True)
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    home = _pg_home(directory) if as_pg else directory
    data = home / "pgdata"
    if not data.exists():
        subprocess.run(
            [*as_pg, str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
             "-E", "UTF8", "--no-locale"],
            check=True, capture_output=True,
        )  # fmt: skip
    sockets = home
    if len(str(home)) > 80:  # a socket's path must fit in 107 bytes: one in /tmp
        sockets = Path(tempfile.mkdtemp(prefix="bgbench-pg-"))
        if as_pg:
            shutil.chown(sockets, "postgres", "postgres")
    options = (
        f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={sockets} "
        "-c fsync=off -c synchronous_commit=off -c max_connections=300 -c shared_buffers=256MB"
    )
    confine = ["taskset", "-c", ",".join(map(str, sorted(cpus)))] if cpus else []
    if confine and shutil.which("taskset") is None:
        apt("util-linux")
    subprocess.run(
        [*confine, *as_pg, str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(home / "pg.log"),
         "-w", "-t", "60", "-o", options, "start"],
        check=True, capture_output=True,
    )  # fmt: skip
    pid = int((data / "postmaster.pid").read_text().splitlines()[0])
    wait_for(lambda: _pg_ready(port), "PostgreSQL", 30)
    info = {"server": "postgres", "port": port, "pid": pid, "dir": str(directory)}
    return {**info, "cpus": sorted(cpus)} if cpus else info


def _pg_home(directory: Path) -> Path:
    """As root, PostgreSQL runs as user postgres, who must reach its data, log and socket:
    in `directory` when that user can get to it (made theirs), else in a directory made
    for them in postgres's home and linked from `directory` (pgdata, pg.log). No mode of
    an existing directory changes: a private home stays private (issue 24, item 4)."""
    linked, log = directory / "pgdata", directory / "pg.log"
    if linked.is_symlink() and linked.resolve().parent.is_dir():  # the cluster of before
        return linked.resolve().parent
    for link in (linked, log):
        if link.is_symlink():  # to a cluster removed by hand: a new one
            link.unlink()
    if linked.exists() or _postgres_can_enter(directory.parent):
        shutil.chown(directory, "postgres", "postgres")
        return directory
    base = Path(pwd.getpwnam("postgres").pw_dir) / "bgbench"
    base.mkdir(mode=0o700, exist_ok=True)
    shutil.chown(base, "postgres", "postgres")
    _sweep_orphans(base)
    home = base / uuid.uuid4().hex[:12]
    home.mkdir(mode=0o700)
    shutil.chown(home, "postgres", "postgres")
    linked.symlink_to(home / "pgdata")
    log.symlink_to(home / "pg.log")
    (home / OWNER).write_text(str(directory))  # last: until then, no sweep looks at it
    return home


def _postgres_can_enter(directory: Path) -> bool:
    check = ["runuser", "-u", "postgres", "--", "test", "-x", str(directory)]
    return subprocess.run(check, capture_output=True).returncode == 0


def _sweep_orphans(base: Path) -> None:
    """Remove the clusters made by _pg_home whose directory is gone (deleted, or linked
    elsewhere) and whose server is not running: their data went with that directory."""
    for home in base.iterdir():
        owner = home / OWNER
        if not owner.exists():
            continue
        link = Path(owner.read_text()) / "pgdata"
        if link.is_symlink() and link.resolve() == (home / "pgdata").resolve():
            continue
        pid_file = home / "pgdata" / "postmaster.pid"
        if pid_file.exists() and running(int(pid_file.read_text().splitlines()[0])):
            continue
        shutil.rmtree(home, ignore_errors=True)


def _pg_ready(port: int) -> bool:
    return (
        subprocess.run(
            [str(PG_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(port)], capture_output=True
        ).returncode
        == 0
    )


def new_database(server: dict[str, Any]) -> str:
    """A new empty database on a PostgreSQL started here; its libpq connection string."""
    name = "bg_" + uuid.uuid4().hex[:12]
    base = f"host=127.0.0.1 port={server['port']} user=postgres"
    subprocess.run(
        [str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(server["port"]), "-U", "postgres",
         name],
        check=True, capture_output=True,
    )  # fmt: skip
    return f"{base} dbname={name}"


def start_memcached(
    directory: Path, port: int | None = None, memory_mb: int = 512
) -> dict[str, Any]:
    if shutil.which("memcached") is None:
        apt("memcached")
    port = port or free_port()
    directory.mkdir(parents=True, exist_ok=True)
    user = ["-u", "memcache"] if os.geteuid() == 0 else []
    log = open(directory / "memcached.log", "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(
        ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", str(memory_mb),
         "-c", "4096", *user],
        stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    wait_for(lambda: tcp_answers(port, b"version\r\n", b"VERSION"), "memcached", 10)
    return {"server": "memcached", "port": port, "pid": proc.pid, "dir": str(directory),
            "memory_mb": memory_mb}  # fmt: skip


def start_mongo_wire(directory: Path, port: int | None = None) -> dict[str, Any]:
    """SecantusDB, a MongoDB-wire server from PyPI (no mongod can be installed here); it
    must be installed in this Python's environment (the test extra has it)."""
    server = Path(sys.executable).with_name("secantusd-py")
    if not server.exists():
        raise SystemExit(f"{server} not found: pip install secantusdb into this environment")
    port = port or free_port()
    (directory / "data").mkdir(parents=True, exist_ok=True)
    log = open(directory / "secantus.log", "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(
        [str(server), "--host", "127.0.0.1", "--port", str(port), "--storage-path",
         str(directory / "data"), "--standalone"],
        stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    wait_for(lambda: tcp_answers(port, b"", b"") or port_open(port), "SecantusDB", 60)
    return {"server": "mongo-wire", "name": "SecantusDB 0.7.0b3", "port": port,
            "pid": proc.pid, "dir": str(directory)}  # fmt: skip


_PG_STAND_IN = "host=127.0.0.1 port=5432 dbname=bg_check"
_CASSANDRA_STAND_IN = {"hosts": ["127.0.0.1"], "port": 9042, "keyspace": "bg_check"}
_CLUSTER_STAND_IN = {**_CASSANDRA_STAND_IN, "hosts": ["127.0.0.1", "127.0.0.2", "127.0.0.3"]}
# The store options store_options gives for each kind, with stand-ins of their form: a
# campaign checks a job's options with these before its servers exist (a job may rely on
# an option its server gives, as read_from: replica relies on replica_dsn).
OPTIONS_GIVEN: dict[str, dict[str, Any]] = {
    "postgres": {"dsn": _PG_STAND_IN},
    "postgres-replica": {"dsn": _PG_STAND_IN, "replica_dsn": _PG_STAND_IN},
    "postgres-replica-delayed": {"dsn": _PG_STAND_IN, "replica_dsn": _PG_STAND_IN},
    "memcached": {"memcached": "127.0.0.1:11211"},
    "mongo-wire": {
        "uri": "mongodb://127.0.0.1:27017",
        "database": "bg_check",
        "server_name": "MongoDB-wire",
    },
    "cassandra": _CASSANDRA_STAND_IN,
    "cassandra-cluster": _CLUSTER_STAND_IN,
    "cassandra-dcs": _CLUSTER_STAND_IN,
    "cassandra-batch": _CASSANDRA_STAND_IN,
    "hbase": {"port": 16000, "table_prefix": "bg_check_", "server_name": "HBase"},
    "node-exporter": {},
    "mysql": {"host": "127.0.0.1", "port": 3306, "user": "root", "database": "bg_check"},
}


def store_options(info: dict[str, Any]) -> dict[str, Any]:
    """The store options (`store.options`) that point a binding at a server started here,
    each with a namespace of its own (a new database, keyspace or table prefix), so jobs
    sharing a server never see each other's data. Every workload's bindings take these."""
    unique = "bg_" + uuid.uuid4().hex[:12]
    port = info["port"]
    if info["server"] == "postgres":
        return {"dsn": new_database(info)}
    if info["server"] == "postgres-replica":
        return _replica().store_options(info)  # type: ignore[no-any-return]
    if info["server"] == "memcached":
        return {"memcached": f"127.0.0.1:{port}"}
    if info["server"] == "mongo-wire":
        return {"uri": f"mongodb://127.0.0.1:{port}", "database": unique,
                "server_name": info["name"]}  # fmt: skip
    if info["server"] == "cassandra":
        return {"hosts": info["hosts"], "port": port, "keyspace": unique}
    if info["server"] == "hbase":
        return {"port": port, "table_prefix": unique + "_", "server_name": info["name"]}
    if info["server"] == "mysql":
        return {"host": "127.0.0.1", "port": port, "user": "root",
                "database": mysql_server.new_database(info)}  # fmt: skip
    if info["server"] == "node-exporter":  # watches a host; no store's to give
        return {}
    raise SystemExit(f"no store options for server {info['server']!r}")


def alive(info: dict[str, Any]) -> bool:
    """Whether every process of a server recorded here still runs (Cassandra: every
    member node, whose pid is 0 while a scenario has it down)."""
    if info["server"] == "cassandra" and "nodes" in info:
        return all(r["pid"] and running(r["pid"]) for r in info["nodes"] if r["member"])
    pids = info.get("pids") or [info["pid"]]
    return all(running(pid) for pid in pids)


def kinds() -> dict[str, Any]:
    """Every kind of server `start` starts, each with its starter (a campaign checks the
    kinds its jobs name against these before it runs any)."""
    return {
        "postgres": start_postgres,
        "memcached": start_memcached,
        "mongo-wire": start_mongo_wire,
        "cassandra": cassandra_server.start,
        "cassandra-cluster": lambda d: cassandra_server.start(d, nodes=3, spares=1),
        "cassandra-dcs": lambda d: cassandra_server.start(d, nodes=3, datacenters=True),
        "cassandra-batch": lambda d: cassandra_server.start(d, commitlog="batch"),
        "hbase": hbase_server.start,
        "node-exporter": node_exporter.start,
        "mysql": mysql_server.start,
        "postgres-replica": lambda d: _replica().start(d),
        "postgres-replica-delayed": lambda d: _replica().start(d, _replica().APPLY_DELAY_MS),
    }


def start(
    kind: str, directory: Path, port: int | None = None, cpus: set[int] | None = None
) -> dict[str, Any]:
    """Start a server of `kind` with its data in `directory`; `port` (PostgreSQL, memcached,
    the MongoDB-wire server and MySQL) asks for the port it had before, so the connection
    settings recorded with a rating still reach its data after a restart. `cpus`
    (PostgreSQL only) confines the server to those CPUs."""
    info: dict[str, Any]
    if cpus:
        if kind != "postgres":
            raise SystemExit(f"--cpus confines PostgreSQL only, not {kind!r}")
        info = start_postgres(directory, port, cpus)
        (directory / STATE).write_text(json.dumps(info))
        return info
    if port is not None and kind in ("postgres", "memcached", "mongo-wire", "mysql"):
        again: dict[str, Callable[[Path, int], dict[str, Any]]] = {
            "postgres": start_postgres, "memcached": start_memcached,
            "mongo-wire": start_mongo_wire, "mysql": mysql_server.start}  # fmt: skip
        info = again[kind](directory, port)
        (directory / STATE).write_text(json.dumps(info))
        return info
    starters = kinds()
    if kind not in starters:
        raise SystemExit(f"unknown server {kind!r}: use {', '.join(starters)}")
    info = {**starters[kind](directory), "kind": kind}
    (directory / STATE).write_text(json.dumps(info))
    return info


def _replica() -> Any:
    """bgbench/launchers/postgres_replica.py, loaded when used: it starts its nodes with the
    PostgreSQL helpers of this module (an import here would be a cycle)."""
    return importlib.import_module("bgbench.launchers.postgres_replica")


def stop(directory: Path) -> None:
    state = directory / STATE
    if not state.exists():
        return
    info = json.loads(state.read_text())
    if info.get("pid") and info.get("paused"):  # paused by a scenario: SIGTERM waits
        signal_tree(info["pid"], signal.SIGCONT)
    if info["server"] == "postgres":
        stop_postgres(directory)
    elif info["server"] == "postgres-replica":
        _replica().stop(directory, info)
    elif info["server"] == "cassandra":
        cassandra_server.stop(info)
    elif info["server"] == "hbase":
        hbase_server.stop(info)
    elif info["server"] == "mysql":
        mysql_server.stop(info)
    else:
        stop_pid(info["pid"])
    state.unlink()


def stop_postgres(directory: Path, wait_s: int = 30) -> None:
    """A fast shutdown, waited for up to `wait_s` (its checkpoint can take that long on a
    busy host; the caller checks the postmaster's pid after)."""
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    data = (directory / "pgdata").resolve()  # in postgres's home when linked from there
    subprocess.run(
        [*as_pg, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t",
         str(wait_s), "stop"],
        capture_output=True, timeout=wait_s + 30,
    )  # fmt: skip


def main(argv: list[str]) -> None:
    """The command line above (argv without the program name)."""
    if len(argv) == 3 and argv[0] == "start":
        print(json.dumps(start(argv[1], Path(argv[2]).resolve())))
    elif len(argv) == 5 and argv[0] == "start" and argv[3] == "--cpus":
        cpus = {int(c) for c in argv[4].split(",") if c.strip().isdigit()}
        print(json.dumps(start(argv[1], Path(argv[2]).resolve(), cpus=cpus or None)))
    elif len(argv) >= 2 and argv[0] == "fetch":
        versions = {"cassandra": cassandra_server.VERSION, "hbase": hbase_server.VERSION}
        for name in argv[1:]:
            if name not in versions:
                raise SystemExit(f"unknown jars {name!r}: use {', '.join(versions)}")
            print(fetch_jars(name, versions[name]))
    elif len(argv) == 2 and argv[0] == "stop":
        stop(Path(argv[1]).resolve())
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
