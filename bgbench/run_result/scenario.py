"""A scenario's figures: the steps as they ran, the phases they cut the experiment into and
its timeline.

A phase starts when a step starts (phase 0, the baseline, at the experiment's start) and
ends when the next reached step starts (the last one at the experiment's end). The
coordinator's ScenarioRecorder (coordinator/scenario/phases.py) builds them; the results
store keeps them inside the experiment's JSON (`ExperimentResult.scenario`), so their
field names are stored keys: they do not change.
"""

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class StepRecord:
    """One step of the scenario as it ran; offsets in seconds from the experiment's start."""

    index: int
    at_s: float  # when it was planned
    action: str  # kill, stop, start, ... run
    node: str = ""
    label: str = ""  # the user's name for it ("" : its action and node name it)
    started_s: float | None = None  # None: the experiment ended before the step was reached
    ended_s: float | None = None
    ok: bool = False
    detail: str = ""  # one line of what was done, or why it failed
    exit_status: int | None = None  # a run step's command (None: none, or it was killed)
    output: str = ""  # a run step's output, bounded and redacted

    @property
    def reached(self) -> bool:
        return self.started_s is not None

    @property
    def text(self) -> str:
        """What the step is called in tables and on charts."""
        if self.label:
            return self.label
        return f"{self.action} {self.node}".strip()

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "StepRecord":
        return cls(**_known(cls, data))


@dataclass
class PhaseFigures:
    """The experiment between two steps, over all agents. Latency percentiles are of every
    action that ended in the phase (failed ones included); throughput counts the
    successful ones."""

    index: int
    label: str  # "baseline" for phase 0, else the text of the step that opened it
    start_s: float
    end_s: float
    actions: int = 0  # performed, errors included
    errors: int = 0
    timeouts: int = 0  # errors whose type names a timeout
    actions_per_s: float = 0.0  # successful actions
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    within_percent: float = 100.0  # of the actions that ended, within beta
    unavailable_s: float = 0.0  # time with no successful action, at interval resolution
    reads: int = 0  # validated reads that started in the phase
    unpredictable: int = 0
    unpredictable_percent: float = 0.0
    lag_p50_ms: float = 0.0  # staleness lag of the phase's unpredictable reads
    lag_p95_ms: float = 0.0
    lag_max_ms: float = 0.0
    # From the phase's start until throughput is back to at least 90% of the baseline's,
    # held for 3 intervals (None: not within the phase; always None for the baseline).
    recover_throughput_s: float | None = None
    # From the phase's start until the SLA holds again (alpha within beta, no errors),
    # held for 3 intervals (None: not within the phase).
    recover_sla_s: float | None = None
    meets_sla: bool = True
    reasons: list[str] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_s - self.start_s)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "PhaseFigures":
        return cls(**_known(cls, data))


@dataclass
class Timeline:
    """The experiment's series over all agents. Progress intervals (`interval_s` apart,
    `t_s` their ends) carry throughput, p95 and errors; the validator's bins (`bin_s`
    long, from the agents' run start, which is `bin_start_s` into the experiment) carry
    the reads and unpredictable reads that started in them."""

    interval_s: float = 0.0
    t_s: list[float] = field(default_factory=list)
    throughput: list[float] = field(default_factory=list)  # successful actions/s
    p95_ms: list[float | None] = field(default_factory=list)  # None: nothing ended in it
    errors_per_s: list[float] = field(default_factory=list)
    within: list[float | None] = field(default_factory=list)  # % within beta; None: idem
    bin_s: float = 0.0
    bin_start_s: float = 0.0  # where the bins' run start falls on the experiment's clock
    reads: list[int] = field(default_factory=list)
    unpredictable: list[int] = field(default_factory=list)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "Timeline":
        return cls(**_known(cls, data))


@dataclass
class ScenarioFigures:
    steps: list[StepRecord] = field(default_factory=list)
    phases: list[PhaseFigures] = field(default_factory=list)
    timeline: Timeline = field(default_factory=Timeline)

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "ScenarioFigures":
        return cls(
            steps=[StepRecord.from_record(s) for s in data.get("steps", [])],
            phases=[PhaseFigures.from_record(p) for p in data.get("phases", [])],
            timeline=Timeline.from_record(data.get("timeline") or {}),
        )


def _known(cls: Any, data: dict[str, Any]) -> dict[str, Any]:
    """A record type's fields from its JSON: keys this bgbench does not know are left."""
    known = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in known}
