"""What the agent and its load processes say to each other: typed, never dicts of keys.

Commands go down the pipe wrapped in a Request (numbered, so a late answer to a
cancelled command is recognised); each gets one Answer carrying its result or an
ErrorInfo. During a run, LatencyDelta messages carry the live histogram; a run ends
with its RunResult (bgbench/run_result). Results hold what every workload shares as
typed fields; what only one workload knows travels as its `workload_payload` (JSON the
workload writes and reads back).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # types only: the agent starts without numpy (imported by both)
    from bgbench.run_result import RunResult
    from bgbench.validation.phases import PhaseClock

PreparePhase = Literal["schema", "load", "all"]


# -- commands ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PrepareCommand:
    """Phase "schema": create the schema, load nothing (one process of the cluster does
    it before any load); "load": load the fragment into the existing schema; "all": both."""

    workload: str
    config_json: str  # the workload's settings section, as its model dumps it
    store: str
    options: dict[str, Any]
    capacities: tuple[float, ...]
    fragment: int
    phase: PreparePhase = "all"


@dataclass(frozen=True)
class ReadyCommand:
    start_state: str  # carry | reload | readback


@dataclass(frozen=True)
class RunCommand:
    experiment_id: str
    threads: int
    duration_s: float
    operation_count: int
    seed: int
    log_dir: str
    start_state: str = "carry"
    target_rate: float = 0.0  # open loop: this process's arrivals/s (0: closed loop)
    arrivals: str = "poisson"  # or "constant"
    tolerate_errors: bool = False  # a scenario's faults: errors never end the run


@dataclass(frozen=True)
class ValidateCommand:
    log_dir: str
    clock: PhaseClock | None = None  # per phase and time bin too, on the log's clock


@dataclass(frozen=True)
class ExitCommand:
    pass


Command = PrepareCommand | ReadyCommand | RunCommand | ValidateCommand | ExitCommand


@dataclass(frozen=True)
class Request:
    seq: int
    command: Command


# -- answers -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorInfo:
    kind: Literal["user", "system"]
    message: str
    trace: str = ""


@dataclass(frozen=True)
class PrepareResult:
    fragment: int | None  # None for phase "schema"
    size: int  # the fragment's entities (BG: members)
    load_seconds: float
    phases: dict[str, float]  # named phase timings of the load, e.g. rows, indexes
    store: str  # the binding's description of the store


@dataclass(frozen=True)
class ReadyResult:
    fragment: int
    size: int
    load_seconds: float
    start_state: str


@dataclass(frozen=True)
class ReadCounts:
    reads: int
    unpredictable: int


@dataclass(frozen=True)
class PhaseReadCounts:
    """The reads of one phase of a run (ValidateRequest.phase_starts_s)."""

    reads: int
    unpredictable: int
    lag_hist: bytes  # HDR histogram (us) of their staleness lag


@dataclass(frozen=True)
class WriteVisibilityCounts:
    """Acknowledged writes of one action to one item kind (validation/visibility.py)."""

    action: str
    item: str
    writes: int
    never: int  # the latest read of their item missed them
    unread: int  # no read of their item started after they ended
    hist: bytes  # HDR histogram (us) of the others' visibility time


@dataclass(frozen=True)
class ValidateSummary:
    fragment: int
    reads: int
    unpredictable_reads: int
    writes: int
    sessions: int
    unpredictable_sessions: int
    log_records: int
    seconds: float
    by_item: dict[str, ReadCounts]
    by_action: dict[str, ReadCounts]
    examples: list[dict[str, Any]]  # a few unpredictable reads, as the validator shows them
    never_valid: int
    lag_hist: bytes
    workload_payload: str = ""
    # With a clock: per phase, and per time bin from the run's start (reads, unpredictable).
    phases: list[PhaseReadCounts] = field(default_factory=list)
    series_reads: list[int] = field(default_factory=list)
    series_unpredictable: list[int] = field(default_factory=list)
    visibility: list[WriteVisibilityCounts] = field(default_factory=list)


if TYPE_CHECKING:
    Result = PrepareResult | ReadyResult | RunResult | ValidateSummary | None
else:

    def __getattr__(name: str) -> Any:
        """Result, made when a load process asks for it (it imports RunResult anyway)."""
        if name == "Result":
            from bgbench.run_result import RunResult

            return PrepareResult | ReadyResult | RunResult | ValidateSummary | None
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Answer:
    seq: int
    result: Result = None
    error: ErrorInfo | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class LatencyDelta:
    """The live latency histogram of the last interval of a run."""

    seq: int
    hist: bytes = field(repr=False)


# Indexes into a load process's shared counters. LAG_US is the worst client lag since
# the agent last reset it; BEATS grows while the process makes progress outside a run
# (rows loaded, phases done, validation chunks): an agent sees a hung load by it.
# TIMEOUTS: the run's errors so far that were timeouts (measurement.is_timeout).
ACTIONS, ERRORS, SESSIONS, LAG_US, BEATS, STOP, TIMEOUTS = 0, 1, 2, 3, 4, 5, 6
COUNTERS = 7
