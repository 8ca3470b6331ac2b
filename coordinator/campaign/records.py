"""A campaign in the results store (tables campaigns and campaign_jobs, coordinator/
results.py): the file's text, bgbench's version, and each job's foreach values, resolved
settings (redacted), servers, rating and outcome."""

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bgbench import __version__
from bgbench.coordinator.campaign.language import Campaign, Job, ServerSpec
from bgbench.coordinator.redaction import redact_config
from bgbench.coordinator.results import ResultsStore
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
            (campaign_id, campaign.name, _now(), _now(), str(campaign.path), campaign.text,
             __version__, str(Path.cwd())),
        )  # fmt: skip
        db.executemany(
            "INSERT INTO campaign_jobs (campaign_id, seq, label, vars_json, settings_json,"
            " servers_json, study, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')",
            [(campaign_id, j.seq, j.label, json.dumps(j.vars), _settings_json(j),
              json.dumps([s.to_dict() for s in j.servers]), j.study) for j in campaign.jobs],
        )  # fmt: skip


def _settings_json(job: Job) -> str:
    assert job.settings is not None
    return json.dumps(redact_config(json.loads(job.settings.model_dump_json())))


def campaign_row(store: ResultsStore, campaign_id: str) -> dict[str, Any]:
    with store.connect() as db:
        row = db.execute("SELECT * FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
    if row is None:
        raise UserError(f"no campaign {campaign_id!r} in {store.path}: see `bgbench campaign list`")
    return dict(row)


def campaigns(store: ResultsStore) -> list[dict[str, Any]]:
    with store.connect() as db:
        rows = db.execute(
            "SELECT c.*, (SELECT count(*) FROM campaign_jobs j WHERE j.campaign_id = c.id) AS jobs,"
            " (SELECT count(*) FROM campaign_jobs j WHERE j.campaign_id = c.id"
            " AND j.status = 'done') AS done FROM campaigns c ORDER BY created, id"
        ).fetchall()
    return [dict(r) for r in rows]


def jobs(store: ResultsStore, campaign_id: str) -> list[JobRecord]:
    with store.connect() as db:
        rows = db.execute(
            "SELECT * FROM campaign_jobs WHERE campaign_id = ? ORDER BY seq", (campaign_id,)
        ).fetchall()
    return [
        JobRecord(
            seq=r["seq"],
            label=r["label"],
            vars=json.loads(r["vars_json"]),
            settings=json.loads(r["settings_json"]),
            servers=json.loads(r["servers_json"]),
            rating_id=r["rating_id"],
            status=r["status"],
            message=r["message"],
            study=r["study"],
        )
        for r in rows
    ]


def update_job(
    store: ResultsStore, campaign_id: str, seq: int, *, status: str, **fields: Any
) -> None:
    sets, values = ["status = ?"], [status]
    for name, value in fields.items():
        column = {"servers": "servers_json"}.get(name, name)
        sets.append(f"{column} = ?")
        values.append(json.dumps(value) if name == "servers" else value)
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
            (status, message, _now(), campaign_id),
        )
