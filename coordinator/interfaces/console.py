"""The console view: one more event sink. It shows the live per-agent table while an
experiment runs on agents and prints each finished experiment's line, on the CLI's stderr."""

from rich.console import Console, Group, RenderableType
from rich.text import Text

from bgbench.coordinator.records.events import (
    AgentProgress,
    AgentsRunning,
    AgentsStopped,
    Event,
    ExperimentResultReady,
    JobStarting,
)
from bgbench.coordinator.reports.report import LiveProgress, experiment_line
from bgbench.coordinator.reports.report_scenario import phase_table
from bgbench.resources.model import Bottleneck


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
            if event.result.scenario is not None:
                self.console.print(phase_table(event.result.scenario))

    def _stop(self) -> None:
        live, self.live = self.live, None
        if live is not None:
            live.__exit__(None, None, None)


def with_bottleneck(shown: RenderableType, bottleneck: Bottleneck | None) -> Group:
    """A result or rating as shown, then what bound it; a client-bound one loudly: its
    figures are the client's limit, not the store's."""
    if bottleneck is None:
        return Group(shown)
    text = Text()
    text.append("Bottleneck: ", style="bold")
    text.append(f"{bottleneck.text}\n")
    for other in bottleneck.others:
        text.append(f"  also saturated: {other}\n")
    if bottleneck.client_bound:
        text.append(
            "WARNING: client-bound: the load processes, not the store, set this limit; "
            "the figures understate the store (add agents or hosts for the load, or "
            'set sla.client_bound = "fail")\n',
            style="bold red",
        )
    return Group(shown, text)
