"""`bgbench report` and `bgbench compare` (coordinator/interfaces/cli.py adds report_app's commands
to its own)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bgbench.coordinator.interfaces.consoles import err, out
from bgbench.inputs import check_output

if TYPE_CHECKING:
    from bgbench.coordinator.storage.frames import ResultFrames

# The DataFrame and plotting modules are imported by the commands that use them: every
# other command (run, rate, agent) starts without pandas or matplotlib.

report_app = typer.Typer()
ResultsFlag = Annotated[
    str | None,
    typer.Option(help="results directory (default results), or a postgresql:// store"),
]


def _frames(results: str | None) -> "ResultFrames":
    from bgbench.coordinator.interfaces.cli_results import results_location
    from bgbench.coordinator.storage.frames import load

    return load(results_location(results))


@report_app.command()
def report(
    ident: Annotated[str, typer.Argument(help="a rating, run or campaign id")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="the HTML file (default ID.html)")
    ] = None,
    results: ResultsFlag = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="also write each figure beside it: png or svg"),
    ] = None,
) -> None:
    """Write one self-contained HTML report (figures inline) of a rating, run or campaign."""
    from rich.text import Text

    from bgbench.coordinator.reports import html_report
    from bgbench.coordinator.reports.html_scenario import scenarios_of
    from bgbench.coordinator.reports.report_scenario import phase_table

    target = check_output(output or Path(f"{ident}.html"), "--output")
    frames = _frames(results)
    written = html_report.report(frames, ident, target, fmt)
    for what, figures in scenarios_of(frames, ident):
        out().print(Text(f"Scenario of {what}", style="bold"))
        out().print(phase_table(figures))
    out().print(f"wrote {written.html} ({len(written.figures)} figures)")
    for path in written.files:
        err().print(f"wrote {path}")


@report_app.command("compare")
def compare_ratings(
    ids: Annotated[list[str], typer.Argument(help="two rating ids or more")],
    results: ResultsFlag = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="also write the comparison as HTML")
    ] = None,
) -> None:
    """Ratings side by side: SoAR with its interval, Socialites, the settings that differ,
    and whether each pair's SoAR differ beyond the noise."""
    from bgbench.coordinator.reports import compare as comparing
    from bgbench.coordinator.reports import html_report

    if output is not None:
        check_output(output, "--output")  # before the work, not after it
    frames = _frames(results)
    comparison = comparing.compare(frames, ids)
    out().print(comparing.render(comparison))
    if output is not None:
        html_report.comparison_page(comparison, output, frames)
        err().print(f"wrote {output}")
