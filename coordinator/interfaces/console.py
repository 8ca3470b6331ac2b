"""The console view: one more event sink. It shows the live per-agent table while an
experiment runs on agents and prints each finished experiment's line, on the CLI's stderr."""

from rich.console import Console

from bgbench.coordinator.records.events import (
    AgentProgress,
    AgentsRunning,
    AgentsStopped,
    Event,
    ExperimentResultReady,
    JobStarting,
)
from bgbench.coordinator.reports.report import LiveProgress, experiment_line


class ConsoleView:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.live: LiveProgress | None = None

    def say(self, line: str) -> None:
        self.console.print(line)

    def emit(self, event: Event) -> None:
        if isinstance(event, AgentsRunning):
            self._stop()
            self.live = LiveProgress(list(event.addresses), event.duration_s, self.console)
            self.live.__enter__()
        elif isinstance(event, AgentProgress):
            if self.live is not None:
                self.live.update(event.agent, event.progress)
        elif isinstance(event, AgentsStopped):
            self._stop()
        elif isinstance(event, JobStarting):
            self.console.rule(f"job {event.seq} of {event.jobs}: {event.label}")
        elif isinstance(event, ExperimentResultReady):
            self.console.print(experiment_line(event.phase, event.result, event.beta_ms))

    def _stop(self) -> None:
        live, self.live = self.live, None
        if live is not None:
            live.__exit__(None, None, None)
