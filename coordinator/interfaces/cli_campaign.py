"""`bgbench campaign check|run|show|list`: ratings of stores x workloads x settings from one
campaign file (coordinator/campaign/)."""

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from bgbench.coordinator.campaign import Campaign, load_campaign, records, run_campaign
from bgbench.coordinator.campaign.records import JobRecord, job_bottleneck
from bgbench.coordinator.interfaces.cli_live import EventsOption, MetricsPortOption, live_sink
from bgbench.coordinator.interfaces.console import ConsoleView
from bgbench.coordinator.rating import api
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import SystemFault, UserError

campaign_app = typer.Typer(
    help="Campaigns: many ratings (stores x workloads x settings) from one file, run and "
    "recorded together, resumable.",
    no_args_is_help=True,
)
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

FileArg = Annotated[Path, typer.Argument(help="campaign file (YAML, see examples/campaigns/)")]
ResultsOption = Annotated[Path | None, typer.Option(help="results directory (default results)")]
JsonOption = Annotated[bool, typer.Option("--json", help="print the outcome as JSON")]


@campaign_app.command("check")
def check(file: FileArg, as_json: JsonOption = False) -> None:
    """Unfold and validate every job of a campaign file, running nothing."""
    campaign = load_campaign(file)
    if as_json:
        print(json.dumps([_job_json(campaign, j.seq) for j in campaign.jobs], indent=2))
    else:
        out.print(jobs_table(campaign))
    if campaign.invalid:
        for job in campaign.invalid:
            print(job.error, file=sys.stderr)
        raise UserError(f"{len(campaign.invalid)} of {len(campaign.jobs)} jobs are invalid")
    if not as_json:
        out.print(f"{file}: {len(campaign.jobs)} valid jobs")


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
    if on_failure not in (None, "continue", "stop"):
        raise UserError(f"--on-failure {on_failure!r}: use continue or stop")
    if (file is None) == (resume is None):
        raise UserError("give a campaign file, or --resume CAMPAIGN_ID (not both)")
    campaign = load_campaign(file) if file is not None else None
    view = ConsoleView(err)
    sink = live_sink(ctx, events, metrics_port, view)  # closed with the command
    outcome = run_campaign(
        campaign, results or Path("results"), resume=resume, on_failure=on_failure,
        say=view.say, events=sink,
    )  # fmt: skip
    store = ResultsStore.existing(outcome.results.parent)
    if as_json:
        print(json.dumps(outcome_json(store, outcome.campaign_id), indent=2))
    else:
        out.print(outcome_table(store, outcome.campaign_id))
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
    store = ResultsStore.existing(api.results_path(results or Path("results")))
    if as_json:
        print(json.dumps(outcome_json(store, campaign_id), indent=2))
    else:
        out.print(outcome_table(store, campaign_id))


@campaign_app.command("list")
def list_campaigns(results: ResultsOption = None) -> None:
    """The recorded campaigns."""
    store = ResultsStore.existing(api.results_path(results or Path("results")))
    table = Table("campaign", "name", "status", "jobs done", "created", title="Campaigns")
    for row in records.campaigns(store):
        table.add_row(
            row["id"], row["name"], row["status"], f"{row['done']}/{row['jobs']}", row["created"]
        )
    out.print(table)


def jobs_table(campaign: Campaign) -> Table:
    varied = campaign.varied
    table = Table(
        "#", "workload", "store", "runs", *varied, "servers", "check",
        title=f"Campaign {campaign.name}: {len(campaign.jobs)} ratings",
    )  # fmt: skip
    for job in campaign.jobs:
        document = job.document
        workload = (document.get("workload") or {}).get("name", "bg")
        store = (document.get("store") or {}).get("name", "sqlite")
        runs = f"study {job.study}" if job.study else "rating"
        table.add_row(
            str(job.seq), str(workload), str(store), runs,
            *[_shown(job.vars.get(v, "")) for v in varied],
            ", ".join(f"{s.kind}{' (fresh)' if s.fresh else ''}" for s in job.servers) or "-",
            "[red]invalid[/red]" if job.error else "valid",
        )  # fmt: skip
    return table


def _job_json(campaign: Campaign, seq: int) -> dict[str, Any]:
    job = campaign.jobs[seq - 1]
    return {
        "seq": job.seq,
        "label": job.label,
        "vars": job.vars,
        "servers": [s.to_dict() for s in job.servers],
        "study": job.study,
        "valid": not job.error,
        "error": job.error,
        "settings": json.loads(job.settings.model_dump_json()) if job.settings else None,
    }


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def outcome_table(store: ResultsStore, campaign_id: str) -> Table:
    row = records.campaign_row(store, campaign_id)
    table = Table(
        "#", "job", "status", "SoAR (95% CI)", "Socialites", "bottleneck", "rating", "why",
        title=f"Campaign {campaign_id} ({row['name']}): {row['status']}",
    )  # fmt: skip
    for job in records.jobs(store, campaign_id):
        soar, socialites, bound = _figures(store, job)
        table.add_row(
            str(job.seq), job.label, job.status, soar, socialites, bound, job.rating_id or "-",
            job.message, style="red" if job.status == "failed" else None,
        )  # fmt: skip
    return table


def _figures(store: ResultsStore, job: JobRecord) -> tuple[str, str, str]:
    """A done job's SoAR (with its interval), Socialites and what bound its rating."""
    if not job.rating_id or job.status != "done":
        return "-", "-", "-"
    record = api.rating_record(store, job.rating_id)
    summary = record.summary
    soar = "-" if record.soar is None else f"{record.soar:,.0f}"
    if summary is not None and summary.soar_low is not None and summary.soar_high is not None:
        soar += f" [{summary.soar_low:,.0f} .. {summary.soar_high:,.0f}]"
    socialites = "-" if record.socialites is None else str(record.socialites)
    return soar, socialites, job_bottleneck(summary)


def outcome_json(store: ResultsStore, campaign_id: str) -> dict[str, Any]:
    row = records.campaign_row(store, campaign_id)
    jobs = []
    for job in records.jobs(store, campaign_id):
        record = api.rating_record(store, job.rating_id) if job.rating_id else None
        jobs.append({
            "seq": job.seq, "label": job.label, "vars": job.vars, "status": job.status,
            "message": job.message, "rating_id": job.rating_id, "servers": job.servers,
            "soar": record.soar if record else None,
            "socialites": record.socialites if record else None,
            "summary": record.summary.to_dict() if record and record.summary else None,
        })  # fmt: skip
    return {
        "campaign_id": campaign_id, "name": row["name"], "status": row["status"],
        "file": row["file"], "version": row["version"], "results": str(store.path), "jobs": jobs,
    }  # fmt: skip
