"""A scenario inside one experiment: its nodes resolved, its steps run by the timeline
from the runs' start, the agents' progress fed to the phase recorder, the validations asked
for per phase, and the figures made when it ends (coordinator/execution/experiment.py)."""

import re
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.configuration.scenario import NodeCommands
from bgbench.coordinator.records.events import EventSink, Say, ScenarioStep
from bgbench.coordinator.scenario.nodes import CommandSpec, ScenarioNode, resolve
from bgbench.coordinator.scenario.phases import ScenarioRecorder
from bgbench.coordinator.scenario.timeline import ScenarioTimeline, step_line
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result.scenario import ScenarioFigures, StepRecord

ProgressCallback = Callable[[int, pb.Progress], None]
SignalHandler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def command_spec(commands: NodeCommands) -> CommandSpec:
    by_action = {
        action: line
        for action in ("kill", "stop", "start", "restart", "pause", "resume")
        if (line := getattr(commands, action))
    }
    return CommandSpec(
        by_action,
        commands.address or "",
        tuple(commands.client_ports),
        tuple(commands.peer_ports),
    )


def scenario_nodes(settings: Settings) -> dict[str, ScenarioNode]:
    """The nodes settings name (UserError for a server directory without nodes)."""
    specs: Mapping[str, CommandSpec] = {
        name: command_spec(c) for name, c in settings.nodes.commands.items()
    }
    return resolve(settings.nodes.servers, specs)


def is_warmup(experiment_id: str) -> bool:
    """A rating's warm-up runs without the scenario (coordinator/rating/ratings.py names
    it RATING-warmupN-TT, a retry of it RATING-warmupN-TT-retryK)."""
    return re.search(r"-warmup\d+-T\d+(-retry\d+)?$", experiment_id) is not None


@dataclass
class ValidateArgs:
    phase_starts_s: list[float]
    series_bin_s: float


class ScenarioRun:
    """One experiment's scenario, from `start` (as the runs start) to `finish`."""

    def __init__(
        self,
        settings: Settings,
        agents: int,
        duration_s: float,
        experiment_id: str,
        say: Say,
        events: EventSink | None = None,
    ) -> None:
        self.settings = settings
        self.experiment_id = experiment_id
        self.events = events
        nodes = scenario_nodes(settings)
        self.recorder = ScenarioRecorder(agents, settings, duration_s=duration_s)
        self.timeline = ScenarioTimeline(
            settings.scenario, nodes, say, self.recorder.boundary, self._step_ended
        )
        self._sigterm: SignalHandler = None
        self._sigterm_installed = False

    def start(self, origin: float | None = None) -> None:
        """The steps' clock starts; until finish, SIGTERM (in the main thread) interrupts
        as Ctrl-C does, so what the scenario did is undone on the way out."""
        origin = time.monotonic() if origin is None else origin
        self.recorder.started = origin
        if threading.current_thread() is threading.main_thread():
            self._sigterm = signal.signal(signal.SIGTERM, _interrupt)
            self._sigterm_installed = True
        self.timeline.start(origin)

    def progress(self, agent: int, received: float, p: pb.Progress) -> None:
        self.recorder.progress(agent, received, p)

    def feeding(self, on_progress: ProgressCallback | None) -> ProgressCallback:
        """`on_progress` that also feeds the phase recorder (as each report arrives)."""

        def both(agent: int, p: pb.Progress) -> None:
            self.recorder.progress(agent, time.monotonic(), p)
            if on_progress is not None:
                on_progress(agent, p)

        return both

    def validate_args(self, agent: int) -> ValidateArgs:
        return ValidateArgs(self.recorder.phase_starts_for(agent), self.recorder.series_bin_s)

    def finish(self) -> list[StepRecord]:
        """Stop the steps and undo them (idempotent: call it in a finally)."""
        if self._sigterm_installed and threading.current_thread() is threading.main_thread():
            previous = self._sigterm
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
            self._sigterm_installed = False
        return self.timeline.finish()

    @property
    def undo_failures(self) -> list[str]:
        return self.timeline.undo_failures

    def figures(
        self, validations: Sequence[pb.ValidateReply | BaseException | None]
    ) -> ScenarioFigures:
        return self.recorder.finish(self.finish(), validations)

    def _step_ended(self, record: StepRecord) -> None:
        if self.events is not None:
            self.events.emit(ScenarioStep.of(self.experiment_id, record, step_line(record)))
