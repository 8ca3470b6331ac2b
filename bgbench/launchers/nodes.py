"""The nodes of a server started by bgbench/launchers (deploy/local/servers.py), and the
actions a scenario takes on them: kill (SIGKILL), stop (graceful), start (the recorded
command again, waiting until the node serves and its peers see it), restart (stop, start),
pause (SIGSTOP), resume (SIGCONT), add (a spare Cassandra node bootstraps into the ring),
remove (decommission through nodetool over JMX on 127.0.0.1) and restart-cache
(memcached stopped and started on the same port: an empty cache).

Nodes by server kind: cassandra, cassandra-batch: n1. cassandra-dcs: n1, n2, n3.
cassandra-cluster: n1, n2, n3 and the spare n4 (127.0.0.4: configured, not started, not a
member until `add`). postgres: postgres. memcached: cache. mysql: mysql. postgres-replica and
postgres-replica-delayed: primary, standby. Every action updates server.json (pids,
membership), so `servers.py stop DIR` stops what runs now, and `restore` brings back the
membership recorded at start.

Addresses on a loopback Cassandra cluster (seen with `ss -tnp` on a 3-node cluster): every
node listens on its own address (127.0.0.N: storage_port for its peers, the CQL port for
clients), but its OUTBOUND internode connections leave from 127.0.0.1 (an ephemeral
port), whichever node opens them: Cassandra binds no local address and the kernel picks
127.0.0.1 for any 127/8 destination. So a node's own address shows only on the
connections others open to it (daddr = its peer endpoint) and its answers on them (saddr =
its peer endpoint). Dropping those stops every message TO the node; the messages it sends
still leave, unanswered (no gossip acknowledgement, no replies), until its peers convict
it as down, like a one-way partition that becomes a full one after the failure detector's
delay (seconds). PostgreSQL and memcached clients likewise connect from 127.0.0.1.

A server kind with nodes of its own plugs in through three functions of its launcher
module (postgres-replica: bgbench/launchers/postgres_replica.py), each given the parsed
server.json (`info`, a dict it may change: it is written back after the call, also when
the call raises) and a deadline on time.monotonic():
    node_infos(directory, info) -> list[NodeInfo]
    node_act(directory, info, node, action, deadline) -> str   (raise NodeActionError)
    node_restore(directory, info, deadline) -> list[str]
`act` has checked the node's name and the action against node_names(kind) first.

Standard library only, like the other launchers.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bgbench.launchers import cassandra_nodes, mysql_server, servers
from bgbench.launchers.cassandra_nodes import CassandraNodeError
from bgbench.launchers.procs import (
    clear_stale_postgres_lock,
    command_line,
    process_state,
    running,
    signal_tree,
    stop_pid,
)

STATE = servers.STATE
LOCK = ".nodes.lock"
PROCESS_ACTIONS = frozenset({"kill", "stop", "start", "restart", "pause", "resume"})
MEMBERSHIP_ACTIONS = frozenset({"add", "remove"})
CACHE_ACTIONS = PROCESS_ACTIONS | {"restart-cache"}
MAX_STATE_BYTES = 1 << 20


class NodeActionError(RuntimeError):
    """A node action failed or timed out (the message says which and why)."""


@dataclass(frozen=True)
class Endpoint:
    address: str
    port: int


@dataclass(frozen=True)
class NodeInfo:
    name: str  # n1..n4 (cassandra), postgres, primary/standby, cache ...
    server: str  # the server kind
    directory: Path  # the server's directory (its server.json)
    address: str  # the node's own address ("" when it shares 127.0.0.1)
    client_endpoints: tuple[Endpoint, ...]  # where clients reach it
    peer_endpoints: tuple[Endpoint, ...]  # endpoints carrying its traffic with its peers
    actions: frozenset[str]  # the scenario actions it supports
    member: bool  # in the server's membership now (a spare n4: False until add)
    state: str = ""  # up, paused, down ("" when not known)


def node_names(kind: str) -> dict[str, frozenset[str]]:
    """Each node a server of `kind` has (spares included) with the actions it offers,
    without starting anything; {} for a kind without nodes to act on."""
    if kind in ("cassandra", "cassandra-batch"):
        return {"n1": PROCESS_ACTIONS}
    if kind == "cassandra-dcs":
        return {f"n{i}": PROCESS_ACTIONS for i in (1, 2, 3)}
    if kind == "cassandra-cluster":  # n1 is the seed: it stays a member
        return {"n1": PROCESS_ACTIONS} | {
            f"n{i}": PROCESS_ACTIONS | MEMBERSHIP_ACTIONS for i in (2, 3, 4)
        }
    if kind == "postgres":
        return {"postgres": PROCESS_ACTIONS}
    if kind == "memcached":
        return {"cache": CACHE_ACTIONS}
    if kind == "mysql":
        return {"mysql": PROCESS_ACTIONS}
    if kind in ("postgres-replica", "postgres-replica-delayed"):
        return {"primary": PROCESS_ACTIONS, "standby": PROCESS_ACTIONS}
    return {}


def read_state(directory: Path) -> dict[str, Any]:
    path = directory / STATE
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_STATE_BYTES + 1)
    except OSError as e:
        raise NodeActionError(f"no server in {directory}: {e.strerror}") from None
    if len(raw) > MAX_STATE_BYTES:
        raise NodeActionError(f"{path} is larger than {MAX_STATE_BYTES} bytes")
    try:
        info = json.loads(raw)
    except ValueError as e:
        raise NodeActionError(f"{path} is not JSON: {e}") from None
    if not isinstance(info, dict) or not isinstance(info.get("server"), str):
        raise NodeActionError(f"{path} names no server")
    return info


def nodes_of(directory: Path) -> list[NodeInfo]:
    """The nodes of the server whose server.json is in `directory`."""
    info = read_state(directory)
    try:
        return _nodes_of(directory, info)
    except FAULTS as e:
        raise _fault(f"the nodes in {directory / STATE}", e) from None


def _nodes_of(directory: Path, info: dict[str, Any]) -> list[NodeInfo]:
    kind = str(info.get("kind", info["server"]))
    offered = node_names(kind)
    if info["server"] == "cassandra":
        return [_cassandra_node(directory, info, kind, r, offered) for r in info.get("nodes", [])]
    if info["server"] == "postgres-replica":
        return list(_replica().node_infos(directory, info))
    name = SINGLE_NODES.get(info["server"])
    if name is None:
        return []
    client = (Endpoint("127.0.0.1", int(info["port"])),)
    return [NodeInfo(name, kind, directory, "", client, (), offered[name], True,
                     _single_state(info))]  # fmt: skip


def _cassandra_node(
    directory: Path,
    info: dict[str, Any],
    kind: str,
    record: dict[str, Any],
    offered: dict[str, frozenset[str]],
) -> NodeInfo:
    host = str(record["host"])
    return NodeInfo(
        name=record["name"], server=kind, directory=directory, address=host,
        client_endpoints=(Endpoint(host, int(info["port"])),),
        peer_endpoints=(Endpoint(host, int(info["storage_port"])),),
        actions=offered.get(record["name"], PROCESS_ACTIONS), member=bool(record["member"]),
        state=cassandra_nodes.state_of(record),
    )  # fmt: skip


# The servers of one process, one node each: the node's name, and the program its pid runs.
SINGLE_NODES = {"postgres": "postgres", "memcached": "cache", "mysql": "mysql"}
SINGLE_PROGRAMS = {"postgres": "postgres", "memcached": "memcached", "mysql": "mariadbd"}


def _single_state(info: dict[str, Any]) -> str:
    pid = int(info["pid"])
    program = SINGLE_PROGRAMS[info["server"]]
    arguments = command_line(pid)
    if not running(pid) or not arguments or Path(arguments[0]).name != program:
        return "down"  # gone, or its pid reused by another process: never signalled
    return "paused" if info.get("paused") else "up"


def act(directory: Path, node: str, action: str, timeout_s: float) -> str:
    """Do `action` to `node`; one line of what was done. NodeActionError on failure or
    timeout; server.json is updated either way (pids, membership)."""
    deadline = time.monotonic() + timeout_s
    with _locked(directory, deadline):
        info = read_state(directory)
        kind = str(info.get("kind", info["server"]))
        offered = node_names(kind)
        if node not in offered:
            known = ", ".join(offered) or "none"
            raise NodeActionError(f"no node {node} in {directory} ({kind}): known nodes {known}")
        if action not in offered[node]:
            can = ", ".join(sorted(offered[node]))
            raise NodeActionError(f"{node} ({kind}) cannot {action}: it can {can}")
        try:
            return _act(directory, info, node, action, deadline)
        except FAULTS as e:
            raise _fault(f"{action} {node}", e) from None
        finally:
            _write_state(directory, info)


def _act(directory: Path, info: dict[str, Any], node: str, action: str, deadline: float) -> str:
    if info["server"] == "cassandra":
        return cassandra_nodes.act(info, node, action, deadline)
    if info["server"] == "postgres-replica":
        return str(_replica().node_act(directory, info, node, action, deadline))
    return _single_act(directory, info, node, action, deadline)


def restore(directory: Path, timeout_s: float) -> list[str]:
    """Back to the membership recorded at start: paused nodes resumed, killed or stopped
    members started, added nodes removed, removed ones added; the lines of what was done."""
    deadline = time.monotonic() + timeout_s
    with _locked(directory, deadline):
        info = read_state(directory)
        try:
            if info["server"] == "cassandra":
                return cassandra_nodes.restore(info, deadline)
            if info["server"] == "postgres-replica":
                return list(_replica().node_restore(directory, info, deadline))
            if info["server"] not in SINGLE_NODES:
                return []
            node = SINGLE_NODES[info["server"]]
            state = _single_state(info)
            if state == "paused":
                return [_single_act(directory, info, node, "resume", deadline)]
            if state == "down":
                return [_single_act(directory, info, node, "start", deadline)]
            return []
        except FAULTS as e:
            raise _fault(f"restore {directory}", e) from None
        finally:
            _write_state(directory, info)


# What a node action may meet: a process or command that fails, a server.json whose
# fields are missing or of the wrong type (it is read as untrusted input).
FAULTS = (
    CassandraNodeError, OSError, RuntimeError, subprocess.SubprocessError, KeyError,
    ValueError, TypeError,
)  # fmt: skip


def _fault(doing: str, e: BaseException) -> NodeActionError:
    """One line saying what failed (a failed command: its status and last line of output)."""
    if isinstance(e, NodeActionError):
        return e
    if isinstance(e, subprocess.CalledProcessError):
        output = e.stderr or e.stdout or ""
        said = output.decode(errors="replace") if isinstance(output, bytes) else str(output)
        last = said.strip().splitlines()[-1:] or ["no output"]
        return NodeActionError(
            f"{doing}: {Path(e.cmd[0]).name} exited {e.returncode}: {last[0][:300]}"
        )
    if isinstance(e, KeyError):
        return NodeActionError(f"{doing}: server.json has no field {e}")
    if isinstance(e, CassandraNodeError):  # its message says it all
        return NodeActionError(f"{doing}: {str(e)[:300]}")
    return NodeActionError(f"{doing}: {type(e).__name__}: {str(e)[:300]}")


def _replica() -> Any:
    """bgbench/launchers/postgres_replica.py, which acts on its own nodes (see above)."""
    return importlib.import_module("bgbench.launchers.postgres_replica")


def _single_act(
    directory: Path, info: dict[str, Any], node: str, action: str, deadline: float
) -> str:
    """PostgreSQL (the postmaster and its backends), memcached or MySQL: one node."""
    state = _single_state(info)
    if state == "down":
        info["paused"] = False
    if action in ("kill", "stop", "pause", "resume", "restart-cache") and state == "down":
        raise NodeActionError(f"{node} is not running")
    if action in ("start",) and state != "down":
        raise NodeActionError(f"{node} is running already (pid {info['pid']})")
    pid = int(info["pid"])
    if action == "kill":
        signal_tree(pid, signal.SIGKILL)  # the whole server, as a crash
        _wait(lambda: not running(pid), f"{node} (pid {pid}) to die", deadline)
        info["paused"] = False
        return f"killed {node} (pid {pid})"
    if action in ("stop", "restart", "restart-cache"):
        done = _single_stop(directory, info, node, deadline) if state != "down" else ""
        if action == "stop":
            return done
        return f"{done}; {_single_start(directory, info, node, deadline)}".lstrip("; ")
    if action == "start":
        return _single_start(directory, info, node, deadline)
    if action in ("pause", "resume"):
        sig = signal.SIGSTOP if action == "pause" else signal.SIGCONT
        signal_tree(pid, sig)
        wanted = "T" if action == "pause" else ""
        _wait(lambda: (process_state(pid) == "T") == (wanted == "T"), f"{node} to {action}",
              deadline)  # fmt: skip
        info["paused"] = action == "pause"
        return f"{action}d {node} (pid {pid})"
    raise NodeActionError(f"{node} cannot {action}")


def _single_stop(directory: Path, info: dict[str, Any], node: str, deadline: float) -> str:
    pid = int(info["pid"])
    signal_tree(pid, signal.SIGCONT)  # a paused server cannot act on SIGTERM
    info["paused"] = False
    if info["server"] == "postgres":  # pg_ctl's own wait ends with the action's bound
        servers.stop_postgres(directory, max(1, int(deadline - time.monotonic())))
        _wait(lambda: not running(pid), f"{node} (pid {pid}) to stop", deadline)
    elif info["server"] == "mysql":  # InnoDB shuts down cleanly on SIGTERM, given time
        stop_pid(pid, max(1.0, min(60.0, deadline - time.monotonic())))
    else:
        stop_pid(pid, max(1.0, min(10.0, deadline - time.monotonic())))
    if running(pid):
        raise NodeActionError(f"{node} (pid {pid}) did not stop")
    return f"stopped {node} (pid {pid})"


def _single_start(directory: Path, info: dict[str, Any], node: str, deadline: float) -> str:
    """The server again on its recorded port (PostgreSQL: on its data, with its CPUs)."""
    port = int(info["port"])
    if info["server"] == "postgres":
        clear_stale_postgres_lock((directory / "pgdata").resolve())
        cpus = set(info["cpus"]) if info.get("cpus") else None
        started = servers.start_postgres(directory, port, cpus)
    elif info["server"] == "mysql":  # on its data directory; InnoDB recovers after a kill
        started = mysql_server.start(directory, port)
    else:
        started = servers.start_memcached(directory, port, int(info.get("memory_mb", 512)))
    info["pid"] = started["pid"]
    if "socket" in started:  # MySQL's, made anew in /tmp when the directory's path is long
        info["socket"] = started["socket"]
    if time.monotonic() > deadline:
        raise NodeActionError(f"{node} started (pid {info['pid']}) after its deadline")
    return f"started {node} (pid {info['pid']}) on port {port}"


def _wait(check: Any, what: str, deadline: float) -> None:
    while not check():
        if time.monotonic() >= deadline:
            raise NodeActionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextlib.contextmanager
def _locked(directory: Path, deadline: float) -> Iterator[None]:
    """One action at a time on a server (its server.json is read, changed, written)."""
    try:
        handle = open(directory / LOCK, "a+b")  # noqa: SIM115 - closed below
    except OSError as e:
        raise NodeActionError(f"no server in {directory}: {e.strerror}") from None
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise NodeActionError(f"{directory}: another node action runs") from None
                time.sleep(0.05)
        yield
    finally:
        handle.close()


def _write_state(directory: Path, info: dict[str, Any]) -> None:
    path = directory / STATE
    partial = path.with_name(STATE + ".partial")
    partial.write_text(json.dumps(info))
    os.replace(partial, path)


ACTION_TIMEOUT_S = 600.0


def describe(node: NodeInfo) -> str:
    clients = " ".join(f"{e.address}:{e.port}" for e in node.client_endpoints) or "-"
    peers = " ".join(f"{e.address}:{e.port}" for e in node.peer_endpoints) or "-"
    member = "member" if node.member else "not a member"
    return (
        f"{node.name}  {node.state or '?'}  {member}  clients {clients}  peers {peers}  "
        f"actions {','.join(sorted(node.actions))}"
    )


COMMANDS = ("nodes", "node", "restore")
USAGE = """deploy/local/servers.py nodes DIR              the nodes of a server, one line each
deploy/local/servers.py node DIR NAME ACTION    kill stop start restart pause resume add
                                                remove restart-cache
deploy/local/servers.py restore DIR             the nodes back as they were at start"""


def main(argv: list[str]) -> None:
    """The node commands (argv without the program name)."""
    arity = {"nodes": 2, "node": 4, "restore": 2}
    if not argv or arity.get(argv[0]) != len(argv):
        raise SystemExit(USAGE)
    try:
        if argv[0] == "nodes":
            for node in nodes_of(Path(argv[1]).resolve()):
                print(describe(node))
        elif argv[0] == "restore":
            for line in restore(Path(argv[1]).resolve(), ACTION_TIMEOUT_S):
                print(line)
        else:
            print(act(Path(argv[1]).resolve(), argv[2], argv[3], ACTION_TIMEOUT_S))
    except NodeActionError as e:
        raise SystemExit(str(e)) from None


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
