"""A scenario: steps at offsets from each rated experiment's start (kill a node, partition
it, run a command ...), and the nodes they name (`nodes`: servers started by
deploy/local/, or nodes the user controls by commands).

    scenario:
      - {at: 20s, do: kill, node: n2}
      - {at: 30s, do: partition, node: standby, from: clients}
      - {at: 40s, do: heal}
      - {at: 45s, do: run, command: "docker restart c1", timeout: 60s}
    nodes:
      servers: [results/servers/cass]
      commands:
        web1: {kill: "ssh web1 pkill -9 app", start: "ssh web1 app", address: 198.18.5.2}

What loading checks (the settings model): each step's fields, in time order, one line per
mistake naming the step (`scenario step 2 (at 50s, start n9): ...`). What needs more than
the settings (which nodes exist, what they can do, how long the experiments last) is
`check_scenario`, called before anything starts.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from bgbench.coordinator.configuration.redaction import REDACTED, redact_text
from bgbench.coordinator.configuration.settings_files import shown
from bgbench.errors import UserError

Action = Literal[
    "kill", "stop", "start", "restart", "pause", "resume", "partition", "heal", "add",
    "remove", "restart-cache", "run",
]  # fmt: skip
ACTIONS: tuple[str, ...] = get_args(Action)
NODELESS = frozenset({"heal", "run"})  # actions that may (heal) or must (run) name no node
PROCESS_ACTIONS = ("kill", "stop", "start", "restart", "pause", "resume")
NETWORK_ACTIONS = frozenset({"partition", "heal"})  # packet filtering: any node with endpoints
SCENARIO_ERROR = "scenario"  # the pydantic error type of a step's mistake (one whole line)
MAX_STEPS = 1000
MAX_COMMAND = 4096  # characters of a command
MAX_DURATION_S = 86_400.0
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
# Where bgbench may filter packets: loopback and the benchmarking range (RFC 2544).
FILTERABLE = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("198.18.0.0/15"))
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


class ScenarioMistake(UserError):
    """A scenario step that cannot run here; `step` is its index (from 0)."""

    def __init__(self, line: str, step: int) -> None:
        super().__init__(line)
        self.step = step


def parse_duration(value: Any) -> float:
    """Seconds of "20s", "1m30s", "500ms", "2m", "1h", "1.5s" or a bare number (seconds)."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or text like 20s, 1m30s, 500ms")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and len(value) <= 64:
        text = value.strip().replace(" ", "")
        try:
            seconds = float(text)
        except ValueError:
            parts = _DURATION_PART.findall(text)
            if not parts or "".join(n + u for n, u in parts) != text:
                raise ValueError(
                    f"{value!r} is not a duration: use seconds or text like 20s, 1m30s, 500ms"
                ) from None
            seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    else:
        raise ValueError("a duration is a number of seconds or text like 20s, 1m30s, 500ms")
    if not 0 <= seconds <= MAX_DURATION_S or seconds != seconds:
        raise ValueError(f"{value!r} is outside 0 .. {MAX_DURATION_S:g} seconds")
    return seconds


def shown_seconds(seconds: float) -> str:
    """20.0 -> "20s", 90.0 -> "90s", 0.5 -> "0.5s": how a step's time is named."""
    return f"{seconds:g}s"


Duration = Annotated[float, BeforeValidator(parse_duration)]


def _command(text: str) -> str:
    """A command as given (run without a shell: shlex splits it); refused when empty, too
    long, unbalanced in its quotes, or holding a secret redacted from a record."""
    if len(text) > MAX_COMMAND:
        raise ValueError(f"a command has at most {MAX_COMMAND} characters")
    if REDACTED in text:
        raise ValueError(
            f"command holds {REDACTED}, a secret redacted when it was recorded: keep secrets "
            "out of commands (in a file or the environment)"
        )
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"command {text!r} does not split into words: {exc}") from None
    if not words:
        raise ValueError("a command needs at least a program")
    return text


Command = Annotated[
    str,
    BeforeValidator(lambda v: _command(v) if isinstance(v, str) else v),
    PlainSerializer(redact_text),  # a URI's password, a secret NAME=value: never written out
]


class Step(BaseModel):
    """One step of a scenario, at `at_s` seconds from the experiment's start."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, populate_by_name=True, serialize_by_alias=True
    )

    at_s: Duration = Field(alias="at", description="seconds from the experiment's start")
    do: Action = Field(description="what to do: " + ", ".join(ACTIONS))
    node: str | None = Field(
        None, max_length=63, description="the node it acts on (heal: all when none; run: none)"
    )
    from_: Literal["others", "clients"] = Field(
        "others", alias="from", description="partition: from the other nodes, or the clients"
    )
    command: Command | None = Field(None, description="run: the command (no shell)")
    timeout_s: Annotated[float, BeforeValidator(parse_duration), Field(ge=1, le=3600)] = Field(
        120.0, alias="timeout", description="how long the step may take (seconds)"
    )
    label: str = Field("", max_length=80, description="its name in reports (default: what it does)")

    def model_post_init(self, context: Any) -> None:
        if not self.label:
            self.label = self.describe()

    def describe(self) -> str:
        """What it does in a few words: "kill n2", "partition standby from clients"."""
        if self.do == "run":
            program = shlex.split(self.command)[0] if self.command else ""
            return f"run {Path(program).name}".strip()
        words = [self.do, self.node or ("all" if self.do == "heal" else "")]
        if self.do == "partition":
            words.append(f"from {self.from_}")
        return " ".join(w for w in words if w)


def step_name(index: int, raw: Any) -> str:
    """`scenario step 2 (at 50s, start n9)`, from the step as written (`index` from 0)."""
    if not isinstance(raw, dict):
        return f"scenario step {index + 1}"
    at = raw.get("at", raw.get("at_s"))
    try:
        when = f"at {shown_seconds(parse_duration(at))}"
    except ValueError:
        when = f"at {shown(at)[:20]}" if at is not None else ""
    what = " ".join(shown(raw[k])[:40] for k in ("do", "node") if raw.get(k) is not None)
    named = ", ".join(w for w in (when, what) if w)
    return f"scenario step {index + 1}" + (f" ({named})" if named else "")


def _mistake(index: int, raw: Any, problem: str) -> PydanticCustomError:
    line = f"{step_name(index, raw)}: {problem}"
    return PydanticCustomError(SCENARIO_ERROR, "{line}", {"line": line, "step": index})


def _field_problem(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"{where}: unknown field (a step has at, do, node, from, command, timeout, label)"
    if err["type"] == "missing":
        return f"{where}: missing"
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{where}: {msg}"


def _rules(step: Step) -> str:
    """What is wrong with a step whose fields are valid ("" when nothing)."""
    if step.do not in NODELESS and not step.node:
        return f"{step.do} needs a node (node: NAME)"
    if step.do == "run" and not step.command:
        return "run needs a command (command: ...)"
    if step.do == "run" and step.node:
        return "run takes no node: its command says what it acts on"
    if step.do != "run" and step.command:
        return f"command is for run steps, not {step.do}"
    if step.do != "partition" and step.from_ != "others":
        return f"from is for partition steps, not {step.do}"
    if not step.label.isprintable():
        return "label: one line of printable text"
    if step.node is not None and not NODE_NAME.fullmatch(step.node):
        return f"node {step.node!r} is not a node name (letters, digits, . _ -)"
    return ""


def validate_steps(value: Any) -> Any:
    """The steps of a scenario, each checked with its number in the message."""
    if not isinstance(value, list):
        return value  # pydantic says it is not a list
    if len(value) > MAX_STEPS:
        raise PydanticCustomError(
            SCENARIO_ERROR, "{line}", {"line": f"scenario: at most {MAX_STEPS} steps"}
        )
    steps: list[Step] = []
    for index, raw in enumerate(value):
        if isinstance(raw, Step):
            raw = raw.model_dump()
        if not isinstance(raw, dict):
            raise _mistake(index, raw, "a step is a mapping: {at: 20s, do: kill, node: n2}")
        action = raw.get("do")
        if action is None:
            raise _mistake(index, raw, f"do: missing (one of {', '.join(ACTIONS)})")
        if action not in ACTIONS:
            raise _mistake(
                index, raw, f"unknown action {str(action)[:40]!r}: use one of {', '.join(ACTIONS)}"
            )
        try:
            step = Step.model_validate(raw)
        except ValidationError as exc:
            raise _mistake(index, raw, _field_problem(exc)) from None
        problem = _rules(step)
        if not problem and steps and step.at_s < steps[-1].at_s:
            problem = (
                f"comes before step {index} (at {shown_seconds(steps[-1].at_s)}): "
                "list the steps in time order"
            )
        if problem:
            raise _mistake(index, raw, problem)
        steps.append(step)
    return steps


Scenario = Annotated[list[Step], BeforeValidator(validate_steps)]


class NodeCommands(BaseModel):
    """A node the user controls by commands (each run without a shell: shlex splits it),
    with the address and ports packet filtering needs to partition it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kill: Command | None = None
    stop: Command | None = None
    start: Command | None = None
    restart: Command | None = None
    pause: Command | None = None
    resume: Command | None = None
    address: str | None = Field(
        None, description="its address, in 127.0.0.0/8 or 198.18.0.0/15 (to partition it)"
    )
    client_ports: list[Annotated[int, Field(ge=1, le=65535)]] = Field(
        default_factory=list, max_length=64, description="ports its clients reach it on"
    )
    peer_ports: list[Annotated[int, Field(ge=1, le=65535)]] = Field(
        default_factory=list, max_length=64, description="ports its peers reach it on"
    )

    @model_validator(mode="after")
    def _filterable(self) -> NodeCommands:
        if self.address is None:
            if self.client_ports or self.peer_ports:
                raise ValueError("ports need the node's address (address: ...)")
            return self
        try:
            address = ipaddress.ip_address(self.address)
        except ValueError:
            raise ValueError(f"address {self.address!r} is not an IP address") from None
        if not any(address in network for network in FILTERABLE):
            raise ValueError(
                f"address {self.address} is outside 127.0.0.0/8 and 198.18.0.0/15, the "
                "only networks bgbench filters packets on"
            )
        return self

    def actions(self) -> frozenset[str]:
        """The actions this node offers: those it has a command for, and partition and
        heal when it has an address and ports."""
        offered = {a for a in PROCESS_ACTIONS if getattr(self, a)}
        if self.address and (self.client_ports or self.peer_ports):
            offered |= NETWORK_ACTIONS
        return frozenset(offered)


def _node_commands(value: Any) -> Any:
    if isinstance(value, dict):
        for name in value:
            if not isinstance(name, str) or not NODE_NAME.fullmatch(name):
                raise ValueError(f"{str(name)[:40]!r} is not a node name (letters, digits, . _ -)")
    return value


class NodesConfig(BaseModel):
    """Where a scenario's node names come from: servers deploy/local/ (or a campaign)
    started, by their directories, and nodes the user controls by commands."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    servers: list[Path] = Field(
        default_factory=list,
        max_length=64,
        description="server directories of deploy/local/servers.py (their server.json)",
    )
    commands: Annotated[dict[str, NodeCommands], BeforeValidator(_node_commands)] = Field(
        default_factory=dict, max_length=256, description="nodes controlled by commands"
    )


class _Run(Protocol):
    @property
    def maxexecutiontime(self) -> float: ...


class _SLA(Protocol):
    @property
    def delta_s(self) -> float | None: ...

    @property
    def delta_search_s(self) -> float | None: ...


class _Rating(Protocol):
    @property
    def objective(self) -> str: ...


class Settings(Protocol):
    """What the checks read of config.Settings (which imports this module)."""

    @property
    def scenario(self) -> list[Step]: ...

    @property
    def run(self) -> _Run: ...

    @property
    def sla(self) -> _SLA: ...

    @property
    def rating(self) -> _Rating: ...


def experiments_end(settings: Settings, command: Literal["rate", "run"]) -> tuple[float, str]:
    """How long the shortest experiment a scenario applies to lasts, and the setting that
    says so: `bgbench run` runs for run.maxexecutiontime; a rating's searches last
    sla.delta_search_s (which only grows), its final runs and a sweep's sla.delta_s."""
    run, sla = settings.run, settings.sla
    if command == "run":
        return run.maxexecutiontime, "run.maxexecutiontime"
    final = (sla.delta_s, "sla.delta_s") if sla.delta_s else (run.maxexecutiontime,
                                                              "run.maxexecutiontime")  # fmt: skip
    if settings.rating.objective == "sweep" or not sla.delta_search_s:
        return final
    return min((sla.delta_search_s, "sla.delta_search_s"), final)


def check_scenario(
    settings: Settings,
    node_names: dict[str, frozenset[str]] | None,
    command: Literal["rate", "run"] = "rate",
    source: str = "",
) -> None:
    """What the settings model cannot check of a scenario: each step before the end of
    the experiments it applies to, and (when `node_names` is given: node -> the actions it
    offers) naming a known node that can do it. UserError with one line: the first mistake.
    `source` says where the node names came from, for that line."""
    steps: list[Step] = settings.scenario
    end_s, setting = experiments_end(settings, command)
    for index, step in enumerate(steps):
        name = step_name(index, {"at": step.at_s, "do": step.do, "node": step.node})
        if step.at_s >= end_s:
            raise ScenarioMistake(
                f"{name}: at or after the experiment's end: experiments last "
                f"{shown_seconds(end_s)} ({setting})",
                index,
            )
        if node_names is None or step.node is None:
            continue
        where = f" ({source})" if source else ""
        if not node_names:
            raise ScenarioMistake(
                f"{name}: no node {step.node}: no nodes are known (name them in nodes.servers "
                "or nodes.commands; a campaign job's server names its own)",
                index,
            )
        if step.node not in node_names:
            known = ", ".join(sorted(node_names))
            raise ScenarioMistake(f"{name}: no node {step.node}: known nodes {known}{where}", index)
        offered = node_names[step.node]
        if step.do not in offered:
            can = ", ".join(a for a in ACTIONS if a in offered) or "nothing"
            raise ScenarioMistake(
                f"{name}: node {step.node} cannot {step.do}: it can {can}{where}", index
            )
