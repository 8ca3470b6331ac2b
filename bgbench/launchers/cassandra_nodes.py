"""The node actions of bgbench/launchers/nodes.py on a Cassandra server started by
cassandra_server.py: each works on the server.json record (`info`) it is given, which the
caller writes back. nodetool is org.apache.cassandra.tools.NodeTool from the server's own
jars, over the node's JMX port on 127.0.0.1."""

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bgbench.launchers.cassandra_server import launch, pids_of, sees_peers
from bgbench.launchers.procs import command_line, process_state, running, stop_pid

NODETOOL = "org.apache.cassandra.tools.NodeTool"
# One `nodetool status` line: state (U/D + N/L/J/M), address, ..., host ID.
STATUS_LINE = re.compile(r"^([UD][NLJM])\s+(\S+)\s.*?([0-9a-f]{8}-[0-9a-f-]{27})", re.M)
STOP_GRACE_S = 20.0


class CassandraNodeError(RuntimeError):
    pass


def record_of(info: dict[str, Any], node: str) -> dict[str, Any]:
    for record in info.get("nodes", []):
        if record["name"] == node:
            found: dict[str, Any] = record  # the caller's, changed in place
            return found
    names = ", ".join(r["name"] for r in info.get("nodes", []))
    raise CassandraNodeError(f"no node {node}: known nodes {names}")


def state_of(record: dict[str, Any]) -> str:
    if not record["pid"] or not running(record["pid"]) or not _is_the_node(record):
        return "down"
    return "paused" if record["paused"] else "up"


def _is_the_node(record: dict[str, Any]) -> bool:
    """Whether the recorded pid runs this node (its own cassandra.yaml), not a process that
    got the pid of one long gone: no signal goes to another process."""
    config = next((a for a in record["command"] if a.startswith("-Dcassandra.config=")), None)
    return config is not None and config in command_line(record["pid"])


def act(info: dict[str, Any], node: str, action: str, deadline: float) -> str:
    record = record_of(info, node)
    try:
        return _act(info, record, action, deadline)
    finally:
        info["pids"] = pids_of(info["nodes"])


def _act(info: dict[str, Any], record: dict[str, Any], action: str, deadline: float) -> str:
    name, state = record["name"], state_of(record)
    if state == "down":
        record["pid"], record["paused"] = 0, False
    if action in ("kill", "stop", "pause", "resume") and state == "down":
        raise CassandraNodeError(f"{name} is not running")
    if action == "kill":
        return _kill(record, deadline)
    if action == "stop":
        return _stop(record, deadline)
    if action == "pause":
        return _signal(record, signal.SIGSTOP, "T", deadline)
    if action == "resume":
        return _signal(record, signal.SIGCONT, "", deadline)
    if action == "start":
        return _start(info, record, deadline)
    if action == "restart":
        done = _stop(record, deadline) if state != "down" else f"{name} was not running"
        return f"{done}; {_start(info, record, deadline)}"
    if action == "add":
        return _add(info, record, deadline)
    if action == "remove":
        return _remove(info, record, deadline)
    raise CassandraNodeError(f"{name} cannot {action}")


def _kill(record: dict[str, Any], deadline: float) -> str:
    pid = record["pid"]
    os.kill(pid, signal.SIGKILL)
    _wait(lambda: not running(pid), f"{record['name']} (pid {pid}) to die", deadline)
    record["pid"], record["paused"] = 0, False
    return f"killed {record['name']} (pid {pid})"


def _stop(record: dict[str, Any], deadline: float) -> str:
    pid = record["pid"]
    os.kill(pid, signal.SIGCONT)  # a paused node cannot act on SIGTERM
    stop_pid(pid, max(1.0, min(STOP_GRACE_S, deadline - time.monotonic())))
    if running(pid):
        raise CassandraNodeError(f"{record['name']} (pid {pid}) did not stop")
    record["pid"], record["paused"] = 0, False
    return f"stopped {record['name']} (pid {pid})"


def _signal(record: dict[str, Any], sig: signal.Signals, state: str, deadline: float) -> str:
    pid = record["pid"]
    os.kill(pid, sig)
    wanted = (lambda s: s == "T") if state == "T" else (lambda s: s not in ("T", ""))
    _wait(lambda: wanted(process_state(pid)), f"{record['name']} to be {sig.name}", deadline)
    record["paused"] = sig == signal.SIGSTOP
    verb = "paused" if record["paused"] else "resumed"
    return f"{verb} {record['name']} (pid {pid})"


def _start(info: dict[str, Any], record: dict[str, Any], deadline: float) -> str:
    name = record["name"]
    if state_of(record) != "down":
        raise CassandraNodeError(f"{name} is running already (pid {record['pid']})")
    if not record["member"]:
        raise CassandraNodeError(f"{name} is not a member of the ring: add it")
    record["pid"] = launch(record)
    _wait_joined(info, record, deadline)
    return f"started {name} (pid {record['pid']})"


def _add(info: dict[str, Any], record: dict[str, Any], deadline: float) -> str:
    name = record["name"]
    if record["member"]:
        raise CassandraNodeError(f"{name} is a member already")
    if state_of(record) != "down":
        raise CassandraNodeError(f"{name} is running already (pid {record['pid']})")
    directory = Path(record["dir"])
    shutil.rmtree(directory / "data", ignore_errors=True)  # a removed node joins anew
    yaml = directory / "cassandra.yaml"
    yaml.write_text(yaml.read_text().replace("auto_bootstrap: false", "auto_bootstrap: true"))
    record["pid"] = launch(record)
    record["member"] = True
    try:
        _wait_joined(info, record, deadline)
    except BaseException:
        _give_up(record)
        record["member"] = False
        raise
    return f"added {name} (pid {record['pid']}): bootstrapped, UN"


def _give_up(record: dict[str, Any]) -> None:
    if record["pid"]:
        stop_pid(record["pid"], 5)
    record["pid"], record["paused"] = 0, False


def _remove(info: dict[str, Any], record: dict[str, Any], deadline: float) -> str:
    name = record["name"]
    if not record["member"]:
        raise CassandraNodeError(f"{name} is not a member")
    state = state_of(record)
    if state == "paused":
        raise CassandraNodeError(f"{name} is paused: resume it before remove")
    if state == "up":
        nodetool(info, record, ["decommission", "--force"], deadline)
        _stop(record, deadline)
        how = f"decommissioned {name}"
    else:
        observer = _observer(info, record)
        if observer is None:
            raise CassandraNodeError(f"{name} is down and no other member runs")
        seen: dict[str, tuple[str, str]] = {}
        watcher: dict[str, Any] = observer

        def seen_down() -> bool:  # removenode refuses a node its peers still think alive
            seen.update(_status(info, watcher, deadline, {}))
            return seen.get(record["host"], ("", ""))[0].startswith("D")

        _wait(seen_down, f"{observer['name']} to see {name} down", deadline)
        host_id = seen[record["host"]][1]
        nodetool(info, observer, ["removenode", host_id], deadline)
        how = f"removed {name} (down: removenode through {observer['name']})"
    record["member"] = False
    observer = _observer(info, record)
    if observer is not None:
        _wait(
            lambda: (
                record["host"] not in _status(info, observer, deadline, {record["host"]: ("", "")})
            ),
            f"{observer['name']} to forget {name}",
            deadline,
        )
    return how


def _observer(info: dict[str, Any], record: dict[str, Any]) -> dict[str, Any] | None:
    """Another member that runs (not paused): the one asked how the ring looks."""
    for other in info["nodes"]:
        if other is not record and other["member"] and state_of(other) == "up":
            found: dict[str, Any] = other
            return found
    return None


def _wait_joined(info: dict[str, Any], record: dict[str, Any], deadline: float) -> None:
    """Until the node answers CQL and another running member sees it Up and Normal."""
    name, pid = record["name"], record["pid"]

    def serves() -> bool:
        if not running(pid):
            raise CassandraNodeError(f"{name} exited while starting: {_last_error(record)}")
        return sees_peers(record["host"], info["port"], 0)

    _wait(serves, f"{name} to answer CQL", deadline)
    observer = _observer(info, record)
    if observer is not None:
        _wait(
            lambda: _status(info, observer, deadline, {}).get(record["host"], ("",))[0] == "UN",
            f"{observer['name']} to see {name} up (UN)",
            deadline,
        )


def _last_error(record: dict[str, Any]) -> str:
    """The last ERROR line of a node's log (its tail), with where the log is."""
    log = Path(record["dir"]) / "cassandra.log"
    try:
        with log.open("rb") as f:
            f.seek(max(0, log.stat().st_size - 65536))
            tail = f.read().decode(errors="replace").splitlines()
    except OSError:
        tail = []
    said = next((line.strip() for line in reversed(tail) if "ERROR" in line), "no ERROR line")
    return f"{said[:400]} (log: {log})"


def _status(
    info: dict[str, Any],
    observer: dict[str, Any],
    deadline: float,
    failed: dict[str, tuple[str, str]] | None = None,
) -> dict[str, tuple[str, str]]:
    """`nodetool status` as one node sees the ring: address -> (state, host ID); `failed`
    (when given) when nodetool fails (a poll tries again) rather than raising."""
    try:
        out = nodetool(info, observer, ["status"], deadline)
    except CassandraNodeError:
        if failed is None or time.monotonic() >= deadline:
            raise
        return failed
    return {m[2]: (m[1], m[3]) for m in STATUS_LINE.finditer(out)}


def nodetool(info: dict[str, Any], record: dict[str, Any], args: list[str], deadline: float) -> str:
    command = record["command"]
    classpath = command[command.index("-cp") + 1]
    tools_log = Path(info["dir"]) / "logback-tools.xml"
    cmd = [
        command[0], f"@{Path(record['dir']) / 'jvm.options'}", "-Xmx256m",
        f"-Dlogback.configurationFile={tools_log}", f"-Duser.home={info['dir']}", "-cp", classpath,
        NODETOOL, "-h", "127.0.0.1", "-p", str(record["jmx_port"]), *args,
    ]  # fmt: skip
    timeout = deadline - time.monotonic()
    if timeout <= 0:
        raise CassandraNodeError(f"no time left for nodetool {' '.join(args)}")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CassandraNodeError(
            f"nodetool {' '.join(args)} on {record['name']} timed out"
        ) from None
    if done.returncode != 0:
        said = _first_reason(done.stderr or done.stdout)
        raise CassandraNodeError(f"nodetool {' '.join(args)} on {record['name']}: {said}")
    return done.stdout[-65536:]


def _first_reason(output: str) -> str:
    """nodetool's reason: its `error:` line, else its first line that is no stack frame."""
    lines = [line.strip() for line in output[-65536:].splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error:"):
            return line[:300]
    reasons = [line for line in lines if not line.startswith(("at ", "..."))]
    return (reasons or ["no output"])[0][:300]


def _wait(check: Callable[[], bool], what: str, deadline: float) -> None:
    while True:
        if check():
            return
        if time.monotonic() >= deadline:
            raise CassandraNodeError(f"timed out waiting for {what}")
        time.sleep(0.2)


def restore(info: dict[str, Any], deadline: float) -> list[str]:
    """Back to the membership at start: paused nodes resumed, members that are down
    started, removed ones added again, added ones removed."""
    done: list[str] = []
    members = set(info.get("members", []))
    try:
        for record in info["nodes"]:
            if state_of(record) == "paused":
                done.append(_signal(record, signal.SIGCONT, "", deadline))
        for record in info["nodes"]:
            if record["member"] and record["name"] in members and state_of(record) == "down":
                record["pid"] = 0
                done.append(_start(info, record, deadline))
        for record in info["nodes"]:
            if not record["member"] and record["name"] in members:
                done.append(_add(info, record, deadline))
        for record in info["nodes"]:
            if record["member"] and record["name"] not in members:
                done.append(_remove(info, record, deadline))
        for record in info["nodes"]:  # not a member, yet running (a remove that failed)
            if not record["member"] and state_of(record) != "down":
                done.append(_stop(record, deadline))
    finally:
        info["pids"] = pids_of(info["nodes"])
    return done
