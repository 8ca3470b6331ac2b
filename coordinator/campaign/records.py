"""A campaign in the results store (tables campaigns and campaign_jobs, written and read
by coordinator/storage/campaign_rows.py): the file's text, bgbench's version, and each
job's foreach values, resolved settings (redacted), servers, rating and outcome (what
bound it: job_bottleneck)."""

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bgbench import __version__
from bgbench.coordinator.campaign.document import ServerSpec
from bgbench.coordinator.campaign.language import Campaign, Job
from bgbench.coordinator.configuration.redaction import (
    REDACTED,
    redact_config,
    redact_options,
    redact_source,
    redact_text,
)
from bgbench.coordinator.rating.ratings import RatingSummary
from bgbench.coordinator.storage import campaign_rows
from bgbench.coordinator.storage.campaign_rows import NewCampaign, NewJob
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import UserError


@dataclass(frozen=True)
class JobRecord:
    seq: int
    label: str
    vars: dict[str, Any]
    settings: dict[str, Any]  # the resolved document, secrets redacted
    servers: list[dict[str, Any]]
    rating_id: str | None
    status: str  # pending | running | done | failed
    message: str
    study: str = ""

    @property
    def specs(self) -> list[ServerSpec]:
        return [ServerSpec(s["kind"], s["fresh"], s["name"]) for s in self.servers]


def new_campaign_id() -> str:
    import secrets

    return "C" + time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def start_campaign(store: ResultsStore, campaign_id: str, campaign: Campaign) -> None:
    record = NewCampaign(
        id=campaign_id, name=campaign.name, file=str(campaign.path),
        file_text=redact_source(campaign.text), version=__version__, cwd=str(Path.cwd()),
    )  # fmt: skip
    rows = [
        NewJob(j.seq, *_redacted_job(j), json.dumps([s.to_dict() for s in j.servers]), j.study)
        for j in campaign.jobs
    ]
    campaign_rows.insert_campaign(store, record, rows)


def same_text(campaign: Campaign, recorded: str) -> bool:
    """Whether a campaign file still reads as its record (stored with secrets redacted;
    records from before redaction hold the text itself)."""
    return recorded in (campaign.text, redact_source(campaign.text))


def _redacted_job(job: Job) -> tuple[str, str, str]:
    """A job's label, foreach values and settings as stored: a foreach value is a secret
    when its name says so, or when it only appears in the settings where redaction took
    it out (`store.options.dsn: "postgresql://u:${pw}@h/d"`)."""
    assert job.settings is not None
    live = job.settings  # serializing it redacts: its secrets are in its live values
    raw = json.dumps([live.store.options, live.agents.token], default=str)
    settings = json.dumps(redact_config(json.loads(job.settings.model_dump_json())))
    variables, label = redact_options(job.vars), redact_text(job.label)
    for name, value in job.vars.items():
        shown = json.dumps(value)[1:-1] if isinstance(value, str) else json.dumps(value)
        if len(shown) >= 3 and shown in raw and shown not in settings:
            variables[name] = REDACTED
        if variables[name] == REDACTED and str(value):
            label = label.replace(str(value), REDACTED)
    return label, json.dumps(variables), settings


def campaign_row(store: ResultsStore, campaign_id: str) -> dict[str, Any]:
    row = campaign_rows.campaign_row(store, campaign_id)
    if row is None:
        raise UserError(f"no campaign {campaign_id!r} in {store.path}: see `bgbench campaign list`")
    return _shown(row)


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """A campaign row as read: records written before redaction held secrets."""
    row["file_text"] = redact_source(row["file_text"] or "")
    row["message"] = redact_text(row["message"] or "")
    return row


def campaigns(store: ResultsStore) -> list[dict[str, Any]]:
    return [_shown(row) for row in campaign_rows.campaign_rows(store)]


def jobs(store: ResultsStore, campaign_id: str) -> list[JobRecord]:
    checked = campaign_rows.job_rows(store, campaign_id)
    return [
        JobRecord(
            seq=r["seq"],
            label=redact_text(r["label"]),
            vars=redact_options(json.loads(r["vars_json"])),
            settings=json.loads(r["settings_json"]),
            servers=json.loads(r["servers_json"]),
            rating_id=r["rating_id"],
            status=r["status"],
            message=redact_text(r["message"]),
            study=r["study"],
        )
        for r in checked
    ]


def job_bottleneck(summary: RatingSummary | None) -> str:
    """What bound a job's rating (its final experiment), a client-bound one said loudly;
    "-" when its resources were not measured."""
    b = summary.bottleneck if summary is not None else None
    if b is None:
        return "-"
    return f"CLIENT-BOUND: {b.text}" if b.client_bound else b.text


def update_job(
    store: ResultsStore, campaign_id: str, seq: int, *, status: str, **fields: Any
) -> None:
    columns = {
        {"servers": "servers_json"}.get(name, name): (
            json.dumps(value) if name == "servers" else _text(value)
        )
        for name, value in fields.items()
    }
    campaign_rows.update_job(store, campaign_id, seq, status, columns)


def finish_campaign(store: ResultsStore, campaign_id: str, status: str, message: str = "") -> None:
    campaign_rows.finish_campaign(store, campaign_id, status, redact_text(message))


def _text(value: Any) -> Any:
    return redact_text(value) if isinstance(value, str) else value
