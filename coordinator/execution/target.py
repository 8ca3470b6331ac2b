"""What the session runs experiments through: a target (local or listed agents and their
store, or the simulated model store) and the kind of target a store name stands for.

Ratings, runs, campaigns and the deck see only these two protocols; which kind a store
name selects is decided once, in coordinator/execution/target_kinds.py.
"""

import platform
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from bgbench import __version__
from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.records.events import EventSink, Say
from bgbench.run_result import ExperimentResult
from bgbench.workloads import registry

FaultRecorder = Callable[[ExperimentResult], None]


def count_sessions(result: ExperimentResult, settings: Settings) -> ExperimentResult:
    """Sessions are the units of the mix that are sessions, not its single actions (an
    agent counts every unit it plays); sessions/s is on actions/s's time base (the steady
    window's throughput, or the whole run), the sessions' share of the actions being the
    same in both."""
    singles = set(registry.get(settings.workload.name).actions.values())
    for agent in result.agents:
        if agent.per_unit:
            agent.sessions = sum(n for unit, n in agent.per_unit.items() if unit not in singles)
    if result.per_unit:
        result.sessions = sum(n for unit, n in result.per_unit.items() if unit not in singles)
    share = result.sessions / result.actions if result.actions else 0.0
    result.sessions_per_s = result.actions_per_s * share
    return result


def target_versions(store: str) -> dict[str, str]:
    """What a target's experiments ran with, as recorded beside them."""
    return {
        "bgbench": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "store": store,
    }


class ExperimentTarget(Protocol):
    """Runs experiments at (T, duration); says what it runs on."""

    record_fault: FaultRecorder | None  # an attempt an infrastructure failure ended

    def run(
        self, threads: int, duration_s: float, experiment_id: str, rate: float | None = None
    ) -> ExperimentResult: ...

    @property
    def store(self) -> str: ...

    def min_threads(self) -> int: ...

    def max_threads(self) -> int: ...

    def fit_threads(self) -> int | None:
        """The largest T whose threads fit in the loaded fragments (None: any T fits)."""
        ...

    def hosts(self) -> list[dict[str, Any]]: ...

    def versions(self) -> dict[str, str]: ...


class TargetKind(Protocol):
    """What a store name stands for: how its layout is made concrete, what is checked
    before anything starts, and how its target is brought up."""

    measures_a_store: bool  # False for a simulation (a study needs a real store)

    def resolve_layout(self, settings: Settings, threads: int | None) -> None:
        """Make agents.local and agents.processes concrete."""
        ...

    def check_store(self, settings: Settings) -> None:
        """The store and its options, as a study or a campaign job checks them."""
        ...

    def check_before_start(self, settings: Settings, threads: int | None = None) -> None:
        """What can be checked before the target is brought up (for a run, at `threads`)."""
        ...

    def bring_up(
        self, settings: Settings, work_dir: Path, say: Say, events: EventSink | None
    ) -> AbstractContextManager[ExperimentTarget]: ...
