"""`bgbench campaign check|run|show|list`: ratings of stores x workloads x settings from one
campaign file (coordinator/campaign/). Each command imports what it runs (the tables are in
campaign_tables.py), so the rest of the command line starts without them."""

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bgbench.coordinator.interfaces.cli_live import EventsOption, MetricsPortOption, live_sink
from bgbench.coordinator.interfaces.cli_results import results_location
from bgbench.coordinator.interfaces.consoles import err, out
from bgbench.errors import SystemFault, UserError

if TYPE_CHECKING:
    from bgbench.coordinator.storage.results import ResultsStore

campaign_app = typer.Typer(
    help="Campaigns: many ratings (stores x workloads x settings) from one file, run and "
    "recorded together, resumable.",
    no_args_is_help=True,
)

FileArg = Annotated[Path, typer.Argument(help="campaign file (YAML, see examples/campaigns/)")]
ResultsOption = Annotated[
    str | None,
    typer.Option(help="results directory (default results), or a postgresql:// store"),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print the outcome as JSON")]


@campaign_app.command("check")
def check(file: FileArg, as_json: JsonOption = False) -> None:
    """Unfold and validate every job of a campaign file, running nothing."""
    from bgbench.coordinator.campaign import load_campaign
    from bgbench.coordinator.interfaces.campaign_tables import job_json, jobs_table

    campaign = load_campaign(file)
    if as_json:
        print(json.dumps([job_json(campaign, j.seq) for j in campaign.jobs], indent=2))
    else:
        out().print(jobs_table(campaign))
    if campaign.invalid:
        for job in campaign.invalid:
            print(job.error, file=sys.stderr)
        raise UserError(f"{len(campaign.invalid)} of {len(campaign.jobs)} jobs are invalid")
    if not as_json:
        out().print(f"{file}: {len(campaign.jobs)} valid jobs")


@campaign_app.command("run")
def run(
    ctx: typer.Context,
    file: Annotated[Path | None, typer.Argument(help="campaign file (not with --resume)")] = None,
    results: ResultsOption = None,
    resume: Annotated[
        str | None, typer.Option(help="continue this interrupted campaign (its recorded jobs)")
    ] = None,
    on_failure: Annotated[
        str | None, typer.Option(help="continue (the default) or stop at a failed job")
    ] = None,
    as_json: JsonOption = False,
    events: EventsOption = None,
    metrics_port: MetricsPortOption = None,
) -> None:
    """Run a campaign's jobs in order, each a recorded rating; resume one with --resume."""
    from bgbench.coordinator.campaign import load_campaign, run_campaign
    from bgbench.coordinator.interfaces.campaign_tables import outcome_json, outcome_table
    from bgbench.coordinator.interfaces.console import ConsoleView
    from bgbench.coordinator.storage.results import ResultsStore

    if on_failure not in (None, "continue", "stop"):
        raise UserError(f"--on-failure {on_failure!r}: use continue or stop")
    if (file is None) == (resume is None):
        raise UserError("give a campaign file, or --resume CAMPAIGN_ID (not both)")
    campaign = load_campaign(file) if file is not None else None
    view = ConsoleView(err())
    sink = live_sink(ctx, events, metrics_port, view)  # closed with the command
    outcome = run_campaign(
        campaign, results_location(results), resume=resume, on_failure=on_failure,
        say=view.say, events=sink,
    )  # fmt: skip
    store = ResultsStore.reopen(outcome.results)
    if as_json:
        print(json.dumps(outcome_json(store, outcome.campaign_id), indent=2))
    else:
        out().print(outcome_table(store, outcome.campaign_id))
    if outcome.failed:
        raise SystemFault(
            f"{len(outcome.failed)} of {len(outcome.jobs)} jobs failed (campaign "
            f"{outcome.campaign_id}: bgbench campaign show {outcome.campaign_id})"
        )


@campaign_app.command("show")
def show(
    campaign_id: Annotated[str, typer.Argument(help="campaign id")],
    results: ResultsOption = None,
    as_json: JsonOption = False,
) -> None:
    """A campaign's jobs and their outcomes."""
    from bgbench.coordinator.interfaces.campaign_tables import outcome_json, outcome_table

    store = _results_store(results)
    if as_json:
        print(json.dumps(outcome_json(store, campaign_id), indent=2))
    else:
        out().print(outcome_table(store, campaign_id))


@campaign_app.command("list")
def list_campaigns(results: ResultsOption = None) -> None:
    """The recorded campaigns."""
    from rich.table import Table

    from bgbench.coordinator.campaign import records

    store = _results_store(results)
    table = Table("campaign", "name", "status", "jobs done", "created", title="Campaigns")
    for row in records.campaigns(store):
        table.add_row(
            row["id"], row["name"], row["status"], f"{row['done']}/{row['jobs']}", row["created"]
        )
    out().print(table)


def _results_store(results: str | None) -> "ResultsStore":
    from bgbench.coordinator.storage.results import ResultsStore

    return ResultsStore.existing(results_location(results))
