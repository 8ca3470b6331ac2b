"""The nodes a scenario acts on, by name: those of the servers bgbench started (each
directory's server.json, through bgbench.launchers.nodes) and those the user controls by
commands (`nodes.commands`: one command per action, split like a shell would split it but
run without one, its process group killed at the step's timeout).

A command node's state is what its last command left it in; undo resumes a paused one and
starts a killed or stopped one with its own commands. A server's nodes are brought back by
launchers.nodes.restore, which knows the membership recorded when the server started.
"""

import contextlib
import os
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bgbench.coordinator.scenario.network import Endpoint, NetworkNode
from bgbench.errors import UserError
from bgbench.launchers import nodes as launcher_nodes
from bgbench.launchers.nodes import NodeActionError

MAX_OUTPUT = 16 * 1024  # bytes of a command's output kept
KILL_GRACE_S = 5.0
COMMAND_ACTIONS = ("kill", "stop", "start", "restart", "pause", "resume")
UNDONE_BY = {"pause": "resume", "kill": "start", "stop": "start"}


@dataclass(frozen=True)
class CommandSpec:
    """A node the user controls by commands: one command line per action it offers."""

    commands: Mapping[str, str]  # action -> command line
    address: str = ""
    client_ports: tuple[int, ...] = ()
    peer_ports: tuple[int, ...] = ()


@dataclass(frozen=True)
class ScenarioNode:
    name: str
    actions: frozenset[str]
    net: NetworkNode
    directory: Path | None = None  # a launcher server's directory
    spec: CommandSpec | None = None  # a command node's commands


@dataclass
class CommandOutcome:
    exit_status: int | None  # None: killed at the timeout
    output: str
    timed_out: bool


@dataclass
class Running:
    """The command a step runs now (undo kills its process group when the run ends)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    process: subprocess.Popen[bytes] | None = None

    def kill(self) -> None:
        with self.lock:
            if self.process is not None and self.process.poll() is None:
                _kill_group(self.process)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_command(line: str, timeout_s: float, running: Running | None = None) -> CommandOutcome:
    """A command line (shlex-split, no shell) in a process group of its own, its output
    (stdout and stderr together) bounded; the group is killed at the timeout."""
    argv = shlex.split(line)
    if not argv:
        raise UserError("an empty command")
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return CommandOutcome(None, f"cannot run {argv[0]}: {exc.strerror or exc}", False)
    if running is not None:
        with running.lock:
            running.process = process
    chunks: list[bytes] = []

    def read() -> None:  # reads to the end (a pipe never fills), keeps the first MAX_OUTPUT
        assert process.stdout is not None
        kept = 0
        while block := process.stdout.read(65536):
            if kept < MAX_OUTPUT:
                chunks.append(block[: MAX_OUTPUT - kept])
                kept += len(chunks[-1])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    timed_out = False
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process)
        process.wait(timeout=KILL_GRACE_S)
    finally:
        if running is not None:
            with running.lock:
                running.process = None
    # a daemon a start command left holding the pipe is not waited for (nor killed: it
    # may be the node it started)
    reader.join(timeout=KILL_GRACE_S)
    output = b"".join(chunks).decode("utf-8", "replace")
    return CommandOutcome(None if timed_out else process.returncode, output, timed_out)


def server_nodes(directories: Iterable[Path]) -> dict[str, ScenarioNode]:
    """The nodes of the servers in `directories` (their server.json), by name."""
    found: dict[str, ScenarioNode] = {}
    for directory in directories:
        try:
            infos = launcher_nodes.nodes_of(directory)
        except NodeActionError as exc:
            raise UserError(f"nodes.servers: {exc}") from None
        for info in infos:
            if info.name in found:
                raise UserError(
                    f"nodes.servers: node {info.name} is in both {found[info.name].directory} "
                    f"and {directory}: give each scenario servers whose node names differ"
                )
            net = NetworkNode(
                info.name,
                info.address,
                info.client_endpoints,
                info.peer_endpoints,
            )
            found[info.name] = ScenarioNode(info.name, info.actions, net, directory=directory)
    return found


def command_node(name: str, spec: CommandSpec) -> ScenarioNode:
    address = spec.address or "127.0.0.1"
    net = NetworkNode(
        name,
        spec.address,
        tuple(Endpoint(address, p) for p in spec.client_ports),
        tuple(Endpoint(address, p) for p in spec.peer_ports),
    )
    actions = frozenset(a for a in COMMAND_ACTIONS if spec.commands.get(a))
    if spec.client_ports or spec.peer_ports:
        actions |= {"partition", "heal"}
    return ScenarioNode(name, actions, net, spec=spec)


def resolve(
    directories: Iterable[Path], commands: Mapping[str, CommandSpec]
) -> dict[str, ScenarioNode]:
    """Every node a scenario may name: the servers' and the command nodes."""
    found = server_nodes(directories)
    for name, spec in commands.items():
        if name in found:
            raise UserError(
                f"nodes.commands: {name} is also a node of {found[name].directory}: rename it"
            )
        found[name] = command_node(name, spec)
    return found


class NodeActions:
    """Does node actions and remembers what to undo: the servers touched and each command
    node's last state."""

    def __init__(self, nodes: Mapping[str, ScenarioNode]) -> None:
        self.nodes = nodes
        self.touched: list[Path] = []
        self.command_state: dict[str, str] = {}  # node -> its last action
        self._lock = threading.Lock()

    def act(self, name: str, action: str, timeout_s: float, running: Running) -> str:
        """Do `action` to node `name`; one line. NodeActionError on failure."""
        node = self.nodes[name]
        if node.directory is not None:
            with self._lock:
                if node.directory not in self.touched:
                    self.touched.append(node.directory)
            return launcher_nodes.act(node.directory, name, action, timeout_s)
        assert node.spec is not None
        line = node.spec.commands.get(action)
        if not line:
            raise NodeActionError(f"node {name} has no {action} command")
        with self._lock:
            self.command_state[name] = action
        outcome = run_command(line, timeout_s, running)
        if outcome.exit_status != 0:
            tail = " ".join(outcome.output[-300:].split())
            status = (
                f"timed out after {timeout_s:g} s"
                if outcome.timed_out
                else f"exit status {outcome.exit_status}"
            )
            raise NodeActionError(f"{action} {name}: {shlex.split(line)[0]}: {status} {tail}")
        return f"{action} {name}: ran {shlex.split(line)[0]}"

    def undo(self, timeout_s: float, say: Callable[[str], None]) -> list[str]:
        """Back to how the nodes were: each touched server restored, each command node
        resumed or started. The failures (each also said)."""
        failures = []
        for directory in self.touched:
            try:
                for line in launcher_nodes.restore(directory, timeout_s):
                    say(f"undo: {line}")
            except NodeActionError as exc:
                failures.append(f"undo of {directory}: {exc}")
        for name, last in self.command_state.items():
            again = UNDONE_BY.get(last)
            spec = self.nodes[name].spec
            if again is None or spec is None or not spec.commands.get(again):
                continue
            outcome = run_command(spec.commands[again], timeout_s)
            if outcome.exit_status == 0:
                say(f"undo: {again} {name}")
            else:
                failures.append(f"undo: {again} {name} failed (exit {outcome.exit_status})")
        for line in failures:
            say(line)
        return failures
