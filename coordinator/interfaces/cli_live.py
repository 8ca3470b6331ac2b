"""The --events and --metrics-port options of rate and run: their sinks, for the length of
the command."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:  # imported by the command that runs, not for every command's --help
    from bgbench.coordinator.interfaces.console import ConsoleView
    from bgbench.coordinator.records.events import EventSink

EventsOption = Annotated[
    Path | None,
    typer.Option(
        "--events",
        help="append the live events (start, progress, verdicts, end) to this file as JSON "
        "lines, flushed per line",
    ),
]
MetricsPortOption = Annotated[
    int | None,
    typer.Option(
        "--metrics-port",
        min=1,
        max=65535,
        help="serve Prometheus metrics on 127.0.0.1:PORT/metrics while it runs",
    ),
]


def live_sink(
    ctx: typer.Context, events: Path | None, metrics_port: int | None, view: "ConsoleView"
) -> "EventSink":
    """The console view and the sinks asked for, opened now, before anything starts (a busy
    port or an unwritable file is a UserError), and closed when the running command ends."""
    from bgbench.coordinator.records.events import EventSink, Fanout, JsonLinesSink

    sinks: list[EventSink] = [view]
    if metrics_port is not None:
        from bgbench.coordinator.interfaces.prometheus import MetricsServer  # only when asked for

        server = MetricsServer(metrics_port)
        ctx.call_on_close(server.close)
        sinks.append(server)
    if events is not None:
        lines = JsonLinesSink(events)
        ctx.call_on_close(lines.close)
        sinks.append(lines)
    return Fanout(sinks)
