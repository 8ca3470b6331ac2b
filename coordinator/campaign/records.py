"""A campaign in the results store (tables campaigns and campaign_jobs, coordinator/
results.py): the file's text, bgbench's version, and each job's foreach values, resolved
settings (redacted), servers, rating and outcome."""

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
from bgbench.coordinator.storage.results import ResultsStore, checked_row
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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def new_campaign_id() -> str:
    import secrets

    return "C" + time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def start_campaign(store: ResultsStore, campaign_id: str, campaign: Campaign) -> None:
    with store.connect() as db:
        db.execute(
            "INSERT INTO campaigns (id, name, created, updated, status, file, file_text, version,"
            " cwd) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)",
            (campaign_id, campaign.name, _now(), _now(), str(campaign.path),
             redact_source(campaign.text), __version__, str(Path.cwd())),
        )  # fmt: skip
        db.executemany(
            "INSERT INTO campaign_jobs (campaign_id, seq, label, vars_json, settings_json,"
            " servers_json, study, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')",
            [(campaign_id, j.seq, *_redacted_job(j), json.dumps([s.to_dict() for s in j.servers]),
              j.study) for j in campaign.jobs],
        )  # fmt: skip


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
    with store.connect() as db:
        row = db.execute("SELECT * FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
    if row is None:
        raise UserError(f"no campaign {campaign_id!r} in {store.path}: see `bgbench campaign list`")
    return _shown(checked_row(store.path, "campaigns", dict(row)))


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """A campaign row as read: records written before redaction held secrets."""
    row["file_text"] = redact_source(row["file_text"] or "")
    row["message"] = redact_text(row["message"] or "")
    return row


def campaigns(store: ResultsStore) -> list[dict[str, Any]]:
    with store.connect() as db:
        rows = db.execute(
            "SELECT c.*, (SELECT count(*) FROM campaign_jobs j WHERE j.campaign_id = c.id) AS jobs,"
            " (SELECT count(*) FROM campaign_jobs j WHERE j.campaign_id = c.id"
            " AND j.status = 'done') AS done FROM campaigns c ORDER BY created, id"
        ).fetchall()
    return [_shown(checked_row(store.path, "campaigns", dict(r))) for r in rows]


def jobs(store: ResultsStore, campaign_id: str) -> list[JobRecord]:
    with store.connect() as db:
        rows = db.execute(
            "SELECT * FROM campaign_jobs WHERE campaign_id = ? ORDER BY seq", (campaign_id,)
        ).fetchall()
    checked = [checked_row(store.path, "campaign_jobs", dict(r)) for r in rows]
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


def update_job(
    store: ResultsStore, campaign_id: str, seq: int, *, status: str, **fields: Any
) -> None:
    sets, values = ["status = ?"], [status]
    for name, value in fields.items():
        column = {"servers": "servers_json"}.get(name, name)
        sets.append(f"{column} = ?")
        values.append(json.dumps(value) if name == "servers" else _text(value))
    with store.connect() as db:
        db.execute(
            f"UPDATE campaign_jobs SET {', '.join(sets)} WHERE campaign_id = ? AND seq = ?",
            (*values, campaign_id, seq),
        )
        db.execute("UPDATE campaigns SET updated = ? WHERE id = ?", (_now(), campaign_id))


def finish_campaign(store: ResultsStore, campaign_id: str, status: str, message: str = "") -> None:
    with store.connect() as db:
        db.execute(
            "UPDATE campaigns SET status = ?, message = ?, updated = ? WHERE id = ?",
            (status, redact_text(message), _now(), campaign_id),
        )


def _text(value: Any) -> Any:
    return redact_text(value) if isinstance(value, str) else value
