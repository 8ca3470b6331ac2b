"""The nodes of a server started by bgbench/launchers (deploy/local/servers.py), and the
actions a scenario takes on them: kill (SIGKILL), stop (graceful), start (the recorded
command again, waiting until the node serves and its peers see it), restart (stop, start),
pause (SIGSTOP), resume (SIGCONT), add (a spare Cassandra node bootstraps into the ring),
remove (decommission through nodetool over JMX on 127.0.0.1) and restart-cache
(memcached stopped and started on the same port: an empty cache).

Nodes by server kind: cassandra, cassandra-batch: n1. cassandra-dcs: n1, n2, n3.
cassandra-cluster: n1, n2, n3 and the spare n4 (127.0.0.4: configured, not started, not a
member until `add`). postgres: postgres. memcached: cache. postgres-replica: primary,
standby. Every action updates server.json (pids, membership), so `servers.py stop DIR`
stops what runs now, and `restore` brings back the membership recorded at start.

Standard library only, like the other launchers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATE = "server.json"
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
    if kind == "postgres-replica":
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
    raise NodeActionError("node control is being built (issue 27)")


def act(directory: Path, node: str, action: str, timeout_s: float) -> str:
    """Do `action` to `node`; one line of what was done. NodeActionError on failure."""
    raise NodeActionError("node control is being built (issue 27)")


def restore(directory: Path, timeout_s: float) -> list[str]:
    """Back to the membership recorded at start; the lines of what was done."""
    raise NodeActionError("node control is being built (issue 27)")
