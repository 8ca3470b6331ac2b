"""The tables and JSON of `bgbench campaign` (coordinator/interfaces/cli_campaign.py): a
campaign file's jobs, and a recorded campaign's outcome."""

import json
from typing import Any

from rich.table import Table

from bgbench.coordinator.campaign import Campaign, records
from bgbench.coordinator.campaign.records import JobRecord, job_bottleneck
from bgbench.coordinator.rating import api
from bgbench.coordinator.storage.results import ResultsStore


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


def job_json(campaign: Campaign, seq: int) -> dict[str, Any]:
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
