"""PostgreSQL 15 with a streaming hot standby on loopback (server kind `postgres-replica`).

    python deploy/local/servers.py start postgres-replica DIR
    python deploy/local/servers.py start postgres-replica-delayed DIR   # standby 300 ms behind
    python deploy/local/servers.py stop DIR

The primary (DIR/primary) serves clients on 127.0.0.1:PORT and listens on a second loopback
address, REPLICATION_ADDRESS (127.0.2.1), on the same port: the standby's primary_conninfo
names only that address, so a packet filter can cut replication (127.0.2.1:PORT) apart from
the clients (127.0.0.1:PORT). The standby (DIR/standby) is a `pg_basebackup -R -X stream`
copy of the primary on a port of its own, hot_standby on: it answers reads, refuses writes.
`postgres-replica-delayed` starts the standby with recovery_min_apply_delay (APPLY_DELAY_MS):
every commit becomes visible there that long after the primary's, so reads from it under
writes are stale for certain, whatever the machine's speed (a plain standby's lag is a few
milliseconds on loopback, and how many reads fall inside it depends on the machine).

Nodes "primary" and "standby" (launchers/nodes.py dispatches to node_infos, node_act and
node_restore here): kill (SIGKILL the postmaster and its backends), stop (pg_ctl stop -m
fast), start (the recorded pg_ctl start; a primary recovers from its WAL, the standby
reconnects by itself), restart, pause (SIGSTOP the postmaster and every process it
forked), resume (SIGCONT). server.json records each node's command, data directory and
postmaster PID; an action updates it, so `stop DIR` stops what runs now. Standard library
only, like the other launchers.
"""

import contextlib
import os
import pwd
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from bgbench.launchers import servers
from bgbench.launchers.procs import (
    apt,
    children,
    clear_stale_postgres_lock,
    free_port,
    process_state,
    running,
    signal_tree,
    wait_for,
)

KINDS = ("postgres-replica", "postgres-replica-delayed")
SERVER = "postgres-replica"
REPLICATION_ADDRESS = "127.0.2.1"
APPLY_DELAY_MS = 300  # postgres-replica-delayed: how far behind the standby applies commits
NODES = ("primary", "standby")
ACTIONS = frozenset({"kill", "stop", "start", "restart", "pause", "resume"})
COMMAND_TIMEOUT_S = 120.0  # initdb, pg_basebackup, psql: none may hang a start
PG_SETTINGS = (
    "-c fsync=off -c synchronous_commit=off -c max_connections=300 -c shared_buffers=128MB"
)


def _as_pg() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def _run(cmd: list[str], what: str, timeout_s: float = COMMAND_TIMEOUT_S) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what}: no answer within {timeout_s:.0f} s") from None
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed: {(done.stderr or done.stdout).strip()[-2000:]}")
    return done.stdout


def _sockets(home: Path) -> Path:
    """Where the node's unix socket goes: its home, or /tmp when that path is too long."""
    if len(str(home)) <= 80:
        return home
    sockets = Path(tempfile.mkdtemp(prefix="bgbench-pg-"))
    if _as_pg():
        os.chown(sockets, *_postgres_ids())
    return sockets


def _postgres_ids() -> tuple[int, int]:
    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


def _start_command(data: Path, log: Path, port: int, options: str) -> list[str]:
    return [*_as_pg(), str(servers.PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-w",
            "-t", "60", "-o", f"-p {port} {options}", "start"]  # fmt: skip


def _postmaster(data: Path) -> int:
    return int((data / "postmaster.pid").read_text().splitlines()[0])


def _psql(port: int, sql: str, dbname: str = "postgres", timeout_s: float = 10.0) -> str:
    cmd = [str(servers.PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
           "-d", dbname, "-Atqc", sql]  # fmt: skip
    return _run(cmd, f"psql on port {port}", timeout_s).strip()


def start(directory: Path, apply_delay_ms: int = 0) -> dict[str, Any]:
    """A primary and its hot standby, each with its data under `directory`; with
    `apply_delay_ms`, the standby applies each commit that long after the primary."""
    if not (servers.PG_BIN / "initdb").exists():
        apt("postgresql")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "primary").mkdir(exist_ok=True)
    (directory / "standby").mkdir(exist_ok=True)
    primary = _start_primary(directory / "primary")
    try:
        standby = _start_standby(directory / "standby", primary, apply_delay_ms)
    except BaseException:
        _stop_node(primary, 30.0)
        raise
    nodes = [{"name": "primary", "member": True, **primary},
             {"name": "standby", "member": True, **standby}]  # fmt: skip
    return {
        "server": SERVER, "port": primary["port"], "pid": primary["pid"],
        "pids": [primary["pid"], standby["pid"]], "dir": str(directory),
        "replication_address": REPLICATION_ADDRESS, "apply_delay_ms": apply_delay_ms,
        "standby_port": standby["port"], "nodes": nodes,
    }  # fmt: skip


def _home(node_directory: Path) -> Path:
    return servers._pg_home(node_directory) if _as_pg() else node_directory


def _port(node_directory: Path, *hosts: str) -> int:
    """The port the node had (started again on its data: the dsns handed out before still
    reach it), if it is free; else a free one. Recorded in the node's directory."""
    known = node_directory / "port"
    try:
        port = int(known.read_text().strip())
        if all(_bindable(host, port) for host in ("127.0.0.1", *hosts)):
            return port
    except (OSError, ValueError):
        pass
    port = free_port(*hosts)
    known.write_text(str(port))
    return port


def _bindable(host: str, port: int) -> bool:
    """As PostgreSQL binds (SO_REUSEADDR): its own connections of before, in TIME_WAIT, do
    not keep it from its port."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def _start_primary(node_directory: Path) -> dict[str, Any]:
    port = _port(node_directory, REPLICATION_ADDRESS)
    home = _home(node_directory)
    data, log = home / "pgdata", home / "pg.log"
    if not data.exists():
        _run([*_as_pg(), str(servers.PG_BIN / "initdb"), "-D", str(data), "-U", "postgres",
              "--auth=trust", "-E", "UTF8", "--no-locale"], "initdb")  # fmt: skip
        with open(data / "pg_hba.conf", "a") as hba:  # appended: the file stays postgres's
            hba.write("host all all 127.0.0.0/8 trust\nhost replication all 127.0.0.0/8 trust\n")
    options = (
        f"-c listen_addresses=127.0.0.1,{REPLICATION_ADDRESS} "
        f"-c unix_socket_directories={_sockets(home)} {PG_SETTINGS} "
        "-c wal_level=replica -c max_wal_senders=10 -c wal_keep_size=1GB"
    )
    command = _start_command(data, log, port, options)
    _run(command, "starting the primary")
    node = {"port": port, "pid": _postmaster(data), "data": str(data), "log": str(log),
            "command": command}  # fmt: skip
    wait_for(lambda: _ready(port), "the primary", 30)
    return node


def _start_standby(
    node_directory: Path, primary: dict[str, Any], apply_delay_ms: int
) -> dict[str, Any]:
    port = _port(node_directory)
    home = _home(node_directory)
    data, log = home / "pgdata", home / "pg.log"
    if not data.exists():
        _run([*_as_pg(), str(servers.PG_BIN / "pg_basebackup"), "-h", REPLICATION_ADDRESS,
              "-p", str(primary["port"]), "-U", "postgres", "-D", str(data), "-R",
              "-X", "stream", "-c", "fast"], "pg_basebackup of the primary")  # fmt: skip
    # primary_conninfo given here too (a URI: no spaces), so a standby started again on
    # its data follows the primary's port of now rather than the one of its base backup
    conninfo = f"postgresql://postgres@{REPLICATION_ADDRESS}:{primary['port']}/"
    options = (
        f"-c listen_addresses=127.0.0.1 -c unix_socket_directories={_sockets(home)} "
        f"{PG_SETTINGS} -c hot_standby=on -c recovery_min_apply_delay={apply_delay_ms}ms "
        f"-c wal_receiver_status_interval=1s -c primary_conninfo={conninfo}"
    )
    command = _start_command(data, log, port, options)
    _run(command, "starting the standby")
    node = {"port": port, "pid": _postmaster(data), "data": str(data), "log": str(log),
            "command": command}  # fmt: skip
    wait_for(lambda: _ready(port), "the standby", 30)
    wait_for(lambda: _streaming(primary["port"]), "replication to the standby", 60)
    return node


def _ready(port: int) -> bool:
    cmd = [str(servers.PG_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(port)]
    try:
        return subprocess.run(cmd, capture_output=True, timeout=10).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _streaming(primary_port: int) -> bool:
    try:
        sql = "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"
        return _psql(primary_port, sql) == "1"
    except RuntimeError:
        return False


def store_options(info: dict[str, Any], timeout_s: float = 60.0) -> dict[str, Any]:
    """A new database on the primary (`dsn`) and the same on the standby (`replica_dsn`),
    returned once the standby has it (it replays the CREATE DATABASE)."""
    dsn = servers.new_database(info)
    dbname = dsn.rsplit("dbname=", 1)[1]
    standby_port = node_of(info, "standby")["port"]

    def visible() -> bool:
        try:
            return _psql(standby_port, "SELECT 1", dbname) == "1"
        except RuntimeError:
            return False

    wait_for(visible, f"database {dbname} on the standby", timeout_s)
    replica = f"host=127.0.0.1 port={standby_port} user=postgres dbname={dbname}"
    return {"dsn": dsn, "replica_dsn": replica}


def caught_up(info: dict[str, Any]) -> bool:
    """Whether the standby has replayed everything the primary wrote until now."""
    lsn = _psql(info["port"], "SELECT pg_current_wal_insert_lsn()")
    standby_port = node_of(info, "standby")["port"]
    sql = f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn"
    return _psql(standby_port, sql) == "t"


def node_of(info: dict[str, Any], name: str) -> dict[str, Any]:
    """The record of node `name` in server.json's `nodes` (a list, as Cassandra's: name,
    member, port, pid, data, log, command, paused)."""
    for node in info["nodes"]:
        if node["name"] == name:
            return cast(dict[str, Any], node)  # the record itself: actions change it
    raise RuntimeError(f"no node {name} in this postgres-replica")


def node_infos(directory: Path, info: dict[str, Any]) -> list[Any]:
    """The two nodes as launchers.nodes.NodeInfo. Both nodes' peer endpoint is the primary's
    replication address: the standby's WAL stream is the one connection between them (its
    walreceiver connects from 127.0.0.1 to REPLICATION_ADDRESS:PORT, as `ss -tnp` shows)."""
    from bgbench.launchers.nodes import Endpoint, NodeInfo  # nodes imports this module

    peer = (Endpoint(REPLICATION_ADDRESS, int(info["port"])),)
    kind = str(info.get("kind", SERVER))
    found = []
    for name in NODES:
        node = node_of(info, name)
        client = (Endpoint("127.0.0.1", int(node["port"])),)
        found.append(NodeInfo(name, kind, directory, "", client, peer, ACTIONS, True, _state(node)))
    return found


def node_names() -> dict[str, frozenset[str]]:
    return {name: ACTIONS for name in NODES}


def _state(node: dict[str, Any]) -> str:
    pid = int(node["pid"])
    if not running(pid):
        return "down"
    return "paused" if node.get("paused") or process_state(pid) == "T" else "up"


def _stop_node(node: dict[str, Any], timeout_s: float) -> None:
    """pg_ctl stop -m fast (resumed first: a stopped process cannot shut down), then
    SIGKILL to what is left."""
    pid = int(node["pid"])
    node["paused"] = False
    if not running(pid):
        return
    signal_tree(pid, signal.SIGCONT)
    cmd = [*_as_pg(), str(servers.PG_BIN / "pg_ctl"), "-D", node["data"], "-m", "fast", "-w",
           "-t", str(max(1, int(timeout_s))), "stop"]  # fmt: skip
    with contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run(cmd, capture_output=True, timeout=max(1.0, timeout_s) + 5)
    if running(pid):
        _kill_node(node, 10.0)


def _kill_node(node: dict[str, Any], timeout_s: float) -> list[int]:
    """SIGKILL to the postmaster and every process it forked, as a crash."""
    pid = int(node["pid"])
    pids = [pid, *children(pid)]
    signal_tree(pid, signal.SIGKILL)
    node["paused"] = False
    deadline = time.monotonic() + timeout_s
    while any(running(each) for each in pids):
        if time.monotonic() >= deadline:
            raise RuntimeError(f"PIDs {pids} still run {timeout_s:.0f} s after SIGKILL")
        time.sleep(0.05)
    return pids


def _start_node(name: str, node: dict[str, Any], timeout_s: float) -> None:
    """The recorded pg_ctl start (a primary recovers from its WAL; a standby reconnects to
    the primary by itself), after the lock file a killed postmaster left, if any."""
    clear_stale_postgres_lock(Path(node["data"]))
    _run(node["command"], f"starting the {name}", max(1.0, timeout_s))
    node["pid"] = _postmaster(Path(node["data"]))
    node["paused"] = False
    wait_for(lambda: _ready(int(node["port"])), f"the {name}", max(1.0, timeout_s))


def node_act(
    directory: Path, info: dict[str, Any], node_name: str, action: str, deadline: float
) -> str:
    """One action on a node of the postgres-replica in `directory` (launchers.nodes.act
    checked the name and the action, holds the lock and writes `info` back); a line of
    what was done. RuntimeError on failure or past the deadline."""
    node = node_of(info, node_name)
    pid = int(node["pid"])
    left = deadline - time.monotonic()
    state = _state(node)
    if action in ("kill", "stop", "pause", "resume") and state == "down":
        raise RuntimeError(f"{node_name} is not running")
    if action == "start" and state != "down":
        raise RuntimeError(f"{node_name} is running already (pid {pid})")
    if action == "kill":
        pids = _kill_node(node, left)
        line = f"killed {node_name} (SIGKILL to pids {', '.join(map(str, pids))})"
    elif action == "stop":
        _stop_node(node, left)
        line = f"stopped {node_name} (pid {pid})"
    elif action in ("start", "restart"):
        if action == "restart":
            _stop_node(node, left)
        _start_node(node_name, node, deadline - time.monotonic())
        line = f"{action}ed {node_name}: pid {node['pid']}, port {node['port']}"
    elif action in ("pause", "resume"):
        signal_tree(pid, signal.SIGSTOP if action == "pause" else signal.SIGCONT)
        wait_for(lambda: (process_state(pid) == "T") == (action == "pause"),
                 f"{node_name} to {action}", max(1.0, left))  # fmt: skip
        node["paused"] = action == "pause"
        line = f"{action}d {node_name} (pid {pid} and its backends)"
    else:
        raise RuntimeError(f"{node_name} cannot {action}")
    info["pid"] = node_of(info, "primary")["pid"]
    info["pids"] = [node_of(info, name)["pid"] for name in NODES]
    return line


def node_restore(directory: Path, info: dict[str, Any], deadline: float) -> list[str]:
    """Both nodes as started: resumed if paused, started if killed or stopped (the primary
    first: the standby streams from it). The lines of what was done."""
    done = []
    for name in NODES:
        state = _state(node_of(info, name))
        if state == "paused":
            done.append(node_act(directory, info, name, "resume", deadline))
        elif state == "down":
            done.append(node_act(directory, info, name, "start", deadline))
    return done


def stop(directory: Path, info: dict[str, Any]) -> None:
    """Both nodes: the standby first, then the primary (fast shutdown, then SIGKILL)."""
    for name in reversed(NODES):
        _stop_node(node_of(info, name), 30.0)
