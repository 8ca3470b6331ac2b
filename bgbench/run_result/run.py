"""One run's figures, a load process's or an agent's: the same type on both sides of the wire.

A load process's engine builds a RunResult; the agent merges its load processes' with
`RunResult.merge` and sends it as the proto's RunResult (`to_proto`); the coordinator
reads it back (`from_proto`) and merges its agents' per-action figures the same way.
Each figure is declared once, below, with how it merges and its name on the wire: a new
per-run figure is one field here (and one in protos/worker.proto when it crosses the
wire). Histograms are HDR-encoded and merge exactly.
"""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from bgbench.protos import worker_pb2 as pb
from bgbench.run_result.histograms import merged, merged_or_empty


@dataclass(frozen=True)
class ActionStats:
    """One action kind's figures in a run."""

    count: int  # performed, errors included
    errors: int
    response_hist: bytes  # HDR histogram (us) of end - intended start
    service_hist: bytes  # HDR histogram (us) of end - actual start
    # a transaction's tallies (sdk.transactions.TALLIES: commits, retries, aborts by
    # cause, gave_up, unknown, backoff_us); empty for an action that is no transaction
    counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def merge(cls, parts: Sequence["ActionStats"]) -> "ActionStats":
        return cls(
            count=sum(p.count for p in parts),
            errors=sum(p.errors for p in parts),
            response_hist=merged_or_empty([p.response_hist for p in parts]),
            service_hist=merged_or_empty([p.service_hist for p in parts]),
            counts=sum_counts([p.counts for p in parts]),
        )


@dataclass(frozen=True)
class ErrorCount:
    """Failed actions of one kind with one error type, and one sample message."""

    action: str
    type: str
    count: int
    sample: str


def sum_counts(parts: Sequence[dict[str, int]]) -> dict[str, int]:
    """Named counts of several fragments or agents added up (store counters, units played)."""
    total: dict[str, int] = {}
    for part in parts:
        for name, n in part.items():
            total[name] = total.get(name, 0) + n
    return total


def payloads(parts: Sequence[str]) -> str:
    """The fragments' workload payloads as one JSON array, in fragment order ("" if none):
    who merges them carries them and knows nothing of what they say."""
    if not any(parts):
        return ""
    return json.dumps([_json_or_text(p) for p in parts])


def _json_or_text(payload: str) -> Any:
    if not payload:
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return payload


def elementwise_sum(parts: Sequence[list[int]]) -> list[int]:
    """Series (one count per interval from the run's start) added interval by interval."""
    total = [0] * max((len(p) for p in parts), default=0)
    for part in parts:
        for i, n in enumerate(part):
            total[i] += n
    return total


def _per_action(parts: Sequence[dict[str, ActionStats]]) -> dict[str, ActionStats]:
    names = list(dict.fromkeys(name for part in parts for name in part))
    return {n: ActionStats.merge([p[n] for p in parts if n in p]) for n in names}


Values = list[Any]
Rule = Callable[[Values, Sequence["RunResult"]], Any]

# How each figure of several runs (load processes, or agents) becomes one run's.
MERGES: dict[str, Rule] = {
    "sum": lambda v, _: sum(v),
    "max": lambda v, _: max(v, default=0.0),
    "any": lambda v, _: any(v),
    "all": lambda v, _: all(v),
    "first": lambda v, _: v[0] if v else "",
    "none": lambda v, _: -1,
    "join": lambda v, _: "; ".join(x for x in v if x),
    "distinct": lambda v, _: "; ".join(sorted(set(v))),
    "concat": lambda v, _: [x for part in v for x in part],
    "counts": lambda v, _: sum_counts(v),
    "series": lambda v, _: elementwise_sum(v),
    "hist": lambda v, _: merged_or_empty(v),
    "hist_or_none": lambda v, _: merged(v),
    "payloads": lambda v, _: payloads(v),
    "per_action": lambda v, _: _per_action(v),
    # a load process with no threads idles: its CPU share says nothing of saturation
    "any_working": lambda v, runs: any(x for x, r in zip(v, runs, strict=True) if r.threads),
}


def figure(merge: str, wire: str | None) -> dict[str, str | None]:
    """A run figure's metadata: how it merges (MERGES), its proto RunResult field (None: it
    stays in the load process)."""
    return {"merge": merge, "wire": wire}


@dataclass(frozen=True)
class RunResult:
    """One run's figures; each field's metadata says how it merges and its wire name."""

    threads: int = field(default=0, metadata=figure("sum", "threads"))
    elapsed: float = field(default=0.0, metadata=figure("max", "elapsed_seconds"))
    actions: int = field(default=0, metadata=figure("sum", "actions"))
    sessions: int = field(default=0, metadata=figure("sum", "sessions"))
    errors: int = field(default=0, metadata=figure("sum", "errors"))
    # the errors that were timeouts (their type's name says Timeout or TimedOut)
    timeouts: int = field(default=0, metadata=figure("sum", "timeouts"))
    per_action: dict[str, ActionStats] = field(
        default_factory=dict, metadata=figure("per_action", "per_action")
    )
    # units of the mix played (single actions and sessions by name)
    per_unit: dict[str, int] = field(default_factory=dict, metadata=figure("counts", "per_unit"))
    error_counts: list[ErrorCount] = field(
        default_factory=list, metadata=figure("concat", "error_counts")
    )
    # CPU of the socialite loops; whether a load process used nearly all of its core
    cpu_seconds: float = field(default=0.0, metadata=figure("sum", "cpu_seconds"))
    saturated: bool = field(default=False, metadata=figure("any_working", "engine_saturated"))
    embedded: bool = field(default=False, metadata=figure("all", "embedded_store"))  # in-process
    log_records: int = field(default=0, metadata=figure("sum", "log_records"))
    # the binding's own counts (cache hits, ...)
    store_counters: dict[str, int] = field(
        default_factory=dict, metadata=figure("counts", "store_counters")
    )
    # HDR histograms (us): each session's slowest action; each action's delay between its
    # intended start and its store call
    session_hist: bytes = field(default=b"", metadata=figure("hist", "session_hist"))
    client_delay_hist: bytes = field(
        default=b"", metadata=figure("hist_or_none", "client_delay_hist")
    )
    loop_lag_max_ms: float = field(default=0.0, metadata=figure("max", "loop_lag_max_ms"))
    concurrency: str = field(default="", metadata=figure("first", "concurrency"))  # or threads
    # a write failed: reload before the next run; why the run ended early, if it did; what
    # was done before it (e.g. "reload")
    state_uncertain: bool = field(default=False, metadata=figure("any", "state_uncertain"))
    aborted: str = field(default="", metadata=figure("join", "aborted"))
    # what a run that tolerates errors went through without aborting (calls stuck at the end)
    note: str = field(default="", metadata=figure("join", "note"))
    start_state: str = field(default="", metadata=figure("distinct", "start_state"))
    # what only the workload knows: its text per load process, a JSON array once merged
    workload_payload: str = field(default="", metadata=figure("payloads", "workload_payload"))
    load_processes: int = field(default=1, metadata=figure("sum", "load_processes"))
    log_dir: str = field(default="", metadata=figure("first", "log_dir"))
    # actions ended in each interval of ended_interval_s from the run's start, by their own
    # end times (the steady window's throughput; progress reports can come late)
    ended_per_interval: list[int] = field(
        default_factory=list, metadata=figure("series", "ended_per_interval")
    )
    ended_interval_s: float = field(default=0.0, metadata=figure("max", "ended_interval_seconds"))
    # Only in the load process: its fragment (-1 once merged), and its CPU over the whole
    # run, connecting and summaries included.
    fragment: int = field(default=-1, metadata=figure("none", None))
    cpu_seconds_total: float = field(default=0.0, metadata=figure("sum", None))

    @classmethod
    def merge(cls, runs: Sequence["RunResult"]) -> "RunResult":
        """Several runs as one: load processes as their agent's, agents as the experiment's."""
        merged_figures = {
            f.name: MERGES[f.metadata["merge"]]([getattr(r, f.name) for r in runs], runs)
            for f in fields(cls)
        }
        return cls(**merged_figures)

    def to_proto(self) -> pb.RunResult:
        wire: dict[str, Any] = {}
        for f in fields(self):
            if f.metadata["wire"] is not None:
                wire[f.metadata["wire"]] = _to_wire(f.name, getattr(self, f.name))
        return pb.RunResult(**wire)

    @classmethod
    def from_proto(cls, message: pb.RunResult) -> "RunResult":
        kept: dict[str, Any] = {}
        for f in fields(cls):
            if f.metadata["wire"] is not None:
                kept[f.name] = _from_wire(f.name, getattr(message, f.metadata["wire"]))
        return cls(**kept)

    def response_hist(self) -> bytes:
        """Every action's response time, all kinds together."""
        return merged_or_empty([a.response_hist for a in self.per_action.values()])


def _to_wire(name: str, value: Any) -> Any:
    if name == "per_action":
        return [
            pb.ActionStats(
                action=action,
                count=s.count,
                errors=s.errors,
                response_hist=s.response_hist,
                service_hist=s.service_hist,
                counts=s.counts,
            )
            for action, s in value.items()
        ]
    if name == "error_counts":
        return [pb.ErrorCount(action=e.action, type=e.type, count=e.count, sample=e.sample)
                for e in value]  # fmt: skip
    return value


def _from_wire(name: str, value: Any) -> Any:
    if name == "per_action":
        rows: dict[str, list[ActionStats]] = {}
        for s in value:
            stats = ActionStats(s.count, s.errors, s.response_hist, s.service_hist, dict(s.counts))
            rows.setdefault(s.action, []).append(stats)
        return {a: parts[0] if len(parts) == 1 else ActionStats.merge(parts)
                for a, parts in rows.items()}  # fmt: skip
    if name == "error_counts":
        return [ErrorCount(e.action, e.type, e.count, e.sample) for e in value]
    if name == "ended_per_interval":
        return list(value)
    if isinstance(value, (str, bytes, bool, int, float)):
        return value
    return dict(value)  # a proto map
