"""An experiment's result: each agent's outcome and the figures over all of them.

The coordinator fills an AgentOutcome from the agent's RunResult (`take_run`) and its
validation (`take_validation`), judges it, then builds the ExperimentResult
(`of_agents`). The results store keeps it as JSON (`to_record`, read back with
`from_record`); its field names are the store's keys and so the DataFrames' sources:
they do not change.
"""

import copy
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from bgbench.protos import new_histogram
from bgbench.protos import worker_pb2 as pb
from bgbench.resources.model import Bottleneck, ResourceFigures
from bgbench.run_result.histograms import LatencySummary, decode, share_within
from bgbench.run_result.run import ActionStats, RunResult
from bgbench.run_result.scenario import ScenarioFigures
from bgbench.run_result.transactions import TransactionFigures
from bgbench.run_result.visibility import WriteVisibility, merge_visibility


@dataclass
class ReadFigures:
    reads: int = 0
    unpredictable: int = 0


@dataclass
class AgentOutcome:
    address: str
    threads: int
    actions: int = 0
    sessions: int = 0
    errors: int = 0
    elapsed_s: float = 0.0
    cpu_percent: float = 0.0  # of one core, all load processes
    load_processes: int = 0
    saturated: bool = False
    embedded_store: bool = False
    within_percent: float = 100.0  # of actions within beta
    session_within_percent: float = 100.0  # of sessions whose every action is within beta
    reads: int = 0
    unpredictable_reads: int = 0
    sessions_read: int = 0
    unpredictable_sessions: int = 0
    log_records_written: int = 0
    log_records_read: int = 0
    validation_s: float = 0.0
    never_valid: int = 0
    lag_hist: str = ""  # HDR histogram (us) of the staleness lag of unpredictable reads
    # when its acknowledged writes became visible, per action and item kind
    visibility: list[WriteVisibility] = field(default_factory=list)
    state_uncertain: bool = False
    aborted: str = ""
    passed: bool = False
    reasons: list[str] = field(default_factory=list)
    error_counts: list[dict[str, Any]] = field(default_factory=list)
    log_dir: str = ""
    start_state: str = ""
    store_counters: dict[str, int] = field(default_factory=dict)  # the binding's own counts
    response_hist: str = ""  # HDR histogram (us), base64: exact merging later
    session_hist: str = ""
    # The client watching itself: each action's delay between its intended start and its
    # store call (p99), the worst client lag the progress stream saw, how socialites ran.
    client_delay_p99_ms: float = 0.0
    client_lag_max_ms: float = 0.0
    concurrency: str = ""
    client_cpu_us_per_action: float = 0.0
    # Validation per tracked item kind and per action that read, by name.
    by_item: dict[str, ReadFigures] = field(default_factory=dict)
    by_action: dict[str, ReadFigures] = field(default_factory=dict)
    per_unit: dict[str, int] = field(default_factory=dict)  # units of the mix played, by name
    phase_seconds: dict[str, float] = field(default_factory=dict)  # named phases of the load
    # What only the workload knows, one entry per fragment of the agent (JSON values).
    run_payload: list[Any] = field(default_factory=list)
    validation_payload: list[Any] = field(default_factory=list)

    @property
    def unpredictable_percent(self) -> float:
        return 100.0 * self.unpredictable_reads / self.reads if self.reads else 0.0

    def take_run(self, run: RunResult, experiment_elapsed: float, bound_us: float) -> None:
        """The agent's run figures: those named alike in both types as they are (a new
        figure kept per agent is a field here of its RunResult name), the rest derived.
        CPU is over the experiment's wall time, not the agent's own: an agent whose threads
        all ended early (or that had none) must not report its few ms as a busy core."""
        for name in SAME_NAMED:
            setattr(self, name, copy.copy(getattr(run, name)))
        responses = decode(run.response_hist())
        sessions = decode(run.session_hist)
        self.elapsed_s = run.elapsed
        cpu = run.cpu_seconds
        self.cpu_percent = 100.0 * cpu / experiment_elapsed if experiment_elapsed else 0.0
        self.embedded_store = run.embedded
        self.within_percent = share_within(responses, bound_us)
        self.session_within_percent = share_within(sessions, bound_us)
        self.response_hist = responses.encode().decode()
        self.session_hist = sessions.encode().decode()
        self.run_payload = json_array(run.workload_payload)
        self.log_records_written = run.log_records
        delays = decode(run.client_delay_hist)
        self.client_delay_p99_ms = delays.get_value_at_percentile(99) / 1000
        self.client_lag_max_ms = max(self.client_lag_max_ms, run.loop_lag_max_ms)
        self.client_cpu_us_per_action = 1e6 * cpu / run.actions if run.actions else 0.0
        self.error_counts = [asdict(e) for e in run.error_counts]

    def take_validation(self, reply: pb.ValidateReply) -> list[dict[str, Any]]:
        """The agent's validation figures; the unpredictable reads it shows as examples."""
        self.reads, self.unpredictable_reads = reply.reads, reply.unpredictable_reads
        self.sessions_read, self.unpredictable_sessions = (
            reply.sessions,
            reply.unpredictable_sessions,
        )
        self.log_records_read, self.validation_s = reply.log_records, reply.seconds
        self.never_valid = reply.never_valid
        self.lag_hist = decode(reply.lag_hist).encode().decode()
        self.visibility = WriteVisibility.of_reply(list(reply.visibility))
        self.by_item = {r.name: ReadFigures(r.reads, r.unpredictable) for r in reply.by_item}
        self.by_action = {r.name: ReadFigures(r.reads, r.unpredictable) for r in reply.by_action}
        self.validation_payload = json_array(reply.workload_payload)
        shown = json.loads(reply.examples_json) if reply.examples_json else []
        return list(shown)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "AgentOutcome":
        nested = {"by_item": _read_figures, "by_action": _read_figures, "visibility": _visibility}
        return cls(**_known(cls, data, nested))


# Figures an agent's outcome keeps as its run gave them. Not `threads` (the coordinator's
# share, asked of the agent) nor `error_counts` (kept as plain objects for the store).
SAME_NAMED = tuple(
    sorted(
        {f.name for f in fields(RunResult)}
        & {f.name for f in fields(AgentOutcome)} - {"threads", "error_counts", "session_hist"}
    )
)


@dataclass
class ActionFigures:
    action: str
    count: int
    errors: int
    response: LatencySummary
    service: LatencySummary
    within_percent: float
    # a transaction's tallies (sdk/transactions.py) and the figures derived from them
    # (None: the action is no transaction, or the record is older than transactions)
    counts: dict[str, int] = field(default_factory=dict)
    transactions: TransactionFigures | None = None

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "ActionFigures":
        nested = {"response": _latency, "service": _latency, "transactions": lambda _: None}
        figures = cls(**_known(cls, data, nested))
        figures.transactions = TransactionFigures.of(figures.counts)  # derived, not read
        return figures


@dataclass
class Steadiness:
    """The experiment's series and the part of it that is rated."""

    interval_s: float = 0.0  # median spacing of the reports
    throughput: list[float] = field(default_factory=list)  # actions/s per interval
    # % within beta per interval (None: nothing ended in it; JSON has no NaN)
    within: list[float | None] = field(default_factory=list)
    cut: int = 0  # intervals cut as warm-up
    warmup_s: float = 0.0
    window_s: float = 0.0
    stable: bool = True
    tested: bool = True  # False: too short to test, rated whole
    run_actions_per_s: float = 0.0  # the whole run's figures, warm-up included
    run_within_percent: float = 100.0

    @property
    def window_throughput(self) -> list[float]:
        return self.throughput[self.cut :]

    @property
    def window_within(self) -> list[float]:
        return [w for w in self.within[self.cut :] if w is not None]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Steadiness":
        return cls(**data)


@dataclass
class ExperimentResult:
    experiment_id: str
    threads: int
    duration_s: float
    elapsed_s: float
    store: str
    actions: int
    sessions: int
    errors: int
    actions_per_s: float
    sessions_per_s: float
    within_percent: float
    unpredictable_percent: float
    reads: int
    unpredictable_reads: int
    per_action: list[ActionFigures]
    overall: LatencySummary
    agents: list[AgentOutcome]
    passed: bool
    fault: str = ""  # an infrastructure failure: the experiment is not rated
    lag: LatencySummary = field(default_factory=LatencySummary.empty)
    never_valid: int = 0  # unpredictable reads of a value the item never held
    # When each acknowledged write became visible to every later read, per action and item
    # kind over all agents (validation/visibility.py), and the writes never visible.
    visibility: list[WriteVisibility] = field(default_factory=list)
    never_visible: int = 0
    coordinator_cpu_s: float = 0.0  # the coordinator's CPU while the agents ran
    progress_events: int = 0  # progress messages received from all agents
    # The load processes' CPU per action over all agents (their whole run: start, actions,
    # summaries); the null store's figure is the framework's own cost.
    client_cpu_us_per_action: float = 0.0
    fault_at: float = 0.0  # when the infrastructure failure was found (Unix time)
    # Over all agents: validation by item kind and by action, a few unpredictable reads
    # (each with its agent), the binding's own counts, the units of the mix played, and
    # the named phases of the load (the longest agent's).
    by_item: dict[str, ReadFigures] = field(default_factory=dict)
    by_action: dict[str, ReadFigures] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    store_counters: dict[str, int] = field(default_factory=dict)
    per_unit: dict[str, int] = field(default_factory=dict)
    phase_seconds: dict[str, float] = field(default_factory=dict)
    # The progress series and the steady part of it that the figures above rate (None:
    # an experiment without a progress stream).
    steady: Steadiness | None = None
    target_rate: float = 0.0  # open loop: the arrival rate asked for, actions/s (0: closed)
    # The hosts' and processes' figures over the rated window and the bottleneck named from
    # them (None: not measured, e.g. the model store, or a record older than them).
    resources: ResourceFigures | None = None
    # A scenario's steps, phases and timeline (None: the experiment ran none).
    scenario: ScenarioFigures | None = None

    @classmethod
    def of_agents(
        cls,
        head: tuple[str, int, float, str],
        outcomes: list[AgentOutcome],
        runs: list[RunResult],
        action_order: Callable[[str], Any],
        bound_us: float,
        fault: str = "",
    ) -> "ExperimentResult":
        """Over all agents (`head`: experiment id, T, duration, store), each outcome
        already judged; per action the agents' runs merged exactly."""
        experiment_id, threads, duration_s, store = head
        run = RunResult.merge(runs)
        overall, lags = new_histogram(), new_histogram()
        for o in outcomes:
            overall.add(decode(o.response_hist.encode()))
            lags.add(decode(o.lag_hist.encode()))
        elapsed = run.elapsed or duration_s
        reads = sum(o.reads for o in outcomes)
        unpredictable = sum(o.unpredictable_reads for o in outcomes)
        return cls(
            lag=LatencySummary.of(lags),
            never_valid=sum(o.never_valid for o in outcomes),
            visibility=merge_visibility([o.visibility for o in outcomes]),
            never_visible=sum(v.never for o in outcomes for v in o.visibility),
            experiment_id=experiment_id,
            threads=threads,
            duration_s=duration_s,
            elapsed_s=elapsed,
            store=store,
            actions=run.actions,
            sessions=run.sessions,
            errors=run.errors,
            actions_per_s=run.actions / elapsed,
            sessions_per_s=run.sessions / elapsed,
            within_percent=share_within(overall, bound_us),
            unpredictable_percent=100.0 * unpredictable / reads if reads else 0.0,
            reads=reads,
            unpredictable_reads=unpredictable,
            per_action=[
                _action_figures(name, run.per_action[name], bound_us)
                for name in sorted(run.per_action, key=action_order)
            ],
            overall=LatencySummary.of(overall),
            agents=outcomes,
            passed=not fault and all(o.passed for o in outcomes),
            fault=fault,
            client_cpu_us_per_action=1e6 * run.cpu_seconds / run.actions if run.actions else 0.0,
            by_item=sum_figures([o.by_item for o in outcomes]),
            by_action=sum_figures([o.by_action for o in outcomes]),
            store_counters=run.store_counters,
            per_unit=run.per_unit,
            phase_seconds=longest_phases([o.phase_seconds for o in outcomes]),
        )

    @classmethod
    def faulted(
        cls,
        experiment_id: str,
        threads: int,
        duration_s: float,
        store: str,
        outcomes: list[AgentOutcome],
        fault: str,
        at: float,
    ) -> "ExperimentResult":
        """An experiment an infrastructure failure ended (or kept from starting)."""
        empty = LatencySummary.of(new_histogram())
        return cls(
            experiment_id, threads, duration_s, 0.0, store, 0, 0, 0, 0.0, 0.0,
            0.0, 0.0, 0, 0, [], empty, outcomes, False, fault, fault_at=at,
        )  # fmt: skip

    @property
    def bottleneck(self) -> Bottleneck | None:
        """What bound it (None: its resources were not measured)."""
        return self.resources.bottleneck if self.resources is not None else None

    @property
    def status(self) -> str:
        """As the results store records it: passed | failed | fault."""
        return "fault" if self.fault else ("passed" if self.passed else "failed")

    def reasons(self) -> str:
        """Why it did not pass, one line: the fault, or each agent's reasons."""
        if self.fault:
            return f"infrastructure: {self.fault}"
        return "; ".join(f"{a.address}: {r}" for a in self.agents for r in a.reasons)

    def to_record(self) -> dict[str, Any]:
        """The results store's JSON of it (result_json)."""
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_record(), indent=2)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "ExperimentResult":
        """A result as the results store holds it (result_json): figures an older record
        lacks take their defaults, keys this bgbench does not know are left."""
        nested: dict[str, Any] = {
            "per_action": lambda rows: [ActionFigures.from_record(r) for r in rows],
            "overall": _latency,
            "lag": _latency,
            "agents": lambda rows: [AgentOutcome.from_record(r) for r in rows],
            "by_item": _read_figures,
            "by_action": _read_figures,
            "steady": lambda s: None if s is None else Steadiness(**_known(Steadiness, s, {})),
            "resources": lambda r: None if r is None else ResourceFigures.from_record(r),
            "scenario": lambda s: None if s is None else ScenarioFigures.from_record(s),
            "visibility": _visibility,
        }
        return cls(**_known(cls, data, nested))


def _action_figures(name: str, stats: ActionStats, bound_us: float) -> ActionFigures:
    response = decode(stats.response_hist)
    return ActionFigures(
        name,
        stats.count,
        stats.errors,
        LatencySummary.of(response),
        LatencySummary.of(decode(stats.service_hist)),
        share_within(response, bound_us),
        stats.counts,
        TransactionFigures.of(stats.counts),
    )


def sum_figures(parts: list[dict[str, ReadFigures]]) -> dict[str, ReadFigures]:
    total: dict[str, ReadFigures] = {}
    for part in parts:
        for name, f in part.items():
            t = total.setdefault(name, ReadFigures())
            t.reads += f.reads
            t.unpredictable += f.unpredictable
    return total


def longest_phases(parts: list[dict[str, float]]) -> dict[str, float]:
    """Per named phase, the longest: fragments and agents load side by side."""
    out: dict[str, float] = {}
    for part in parts:
        for name, seconds in part.items():
            out[name] = max(out.get(name, 0.0), seconds)
    return out


def json_array(text: str) -> list[Any]:
    """An agent's JSON array of its fragments' workload payloads ([] when none)."""
    if not text:
        return []
    value = json.loads(text)
    return value if isinstance(value, list) else [value]


def _latency(data: dict[str, Any]) -> LatencySummary:
    return LatencySummary(**_known(LatencySummary, data, {}))


def _visibility(rows: list[dict[str, Any]]) -> list[WriteVisibility]:
    return [WriteVisibility.from_record(r) for r in rows]


def _read_figures(data: dict[str, Any]) -> dict[str, ReadFigures]:
    return {name: ReadFigures(**_known(ReadFigures, f, {})) for name, f in data.items()}


def _known(cls: Any, data: dict[str, Any], nested: dict[str, Any]) -> dict[str, Any]:
    """A record type's fields from its JSON: keys it does not know are left, nested ones
    built."""
    known = {f.name for f in fields(cls)}
    return {k: nested[k](v) if k in nested else v for k, v in data.items() if k in known}
