"""The campaign tables of the results store (campaigns, campaign_jobs): their rows
written and read back as bgbench wrote them. What goes in a row (the file's text and each
job's settings, redacted) is decided by coordinator/campaign/records.py."""

import time
from dataclasses import dataclass
from typing import Any

from bgbench.coordinator.storage.results import ResultsStore, checked_row


@dataclass(frozen=True)
class NewCampaign:
    """A campaign's row as recorded when it starts."""

    id: str
    name: str
    file: str
    file_text: str
    version: str
    cwd: str


@dataclass(frozen=True)
class NewJob:
    """A job's row as recorded when its campaign starts (status pending)."""

    seq: int
    label: str
    vars_json: str
    settings_json: str
    servers_json: str
    study: str


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def insert_campaign(store: ResultsStore, campaign: NewCampaign, jobs: list[NewJob]) -> None:
    with store.connect() as db:
        db.execute(
            "INSERT INTO campaigns (id, name, created, updated, status, file, file_text, version,"
            " cwd) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)",
            (campaign.id, campaign.name, _now(), _now(), campaign.file, campaign.file_text,
             campaign.version, campaign.cwd),
        )  # fmt: skip
        db.executemany(
            "INSERT INTO campaign_jobs (campaign_id, seq, label, vars_json, settings_json,"
            " servers_json, study, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')",
            [(campaign.id, j.seq, j.label, j.vars_json, j.settings_json, j.servers_json, j.study)
             for j in jobs],
        )  # fmt: skip


def campaign_row(store: ResultsStore, campaign_id: str) -> dict[str, Any] | None:
    """The campaign's row, checked; None when the store holds no such campaign."""
    with store.connect() as db:
        row = db.execute("SELECT * FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
    return None if row is None else checked_row(store.path, "campaigns", dict(row))


def campaign_rows(store: ResultsStore) -> list[dict[str, Any]]:
    """Every campaign's row, checked, with its count of jobs and of jobs done."""
    with store.connect() as db:
        rows = db.execute(
            "SELECT c.*, (SELECT count(*) FROM campaign_jobs j WHERE j.campaign_id = c.id) AS jobs,"
            " (SELECT count(*) FROM campaign_jobs j WHERE j.campaign_id = c.id"
            " AND j.status = 'done') AS done FROM campaigns c ORDER BY created, id"
        ).fetchall()
    return [checked_row(store.path, "campaigns", dict(r)) for r in rows]


def job_rows(store: ResultsStore, campaign_id: str) -> list[dict[str, Any]]:
    """The campaign's job rows in the order they run, checked."""
    with store.connect() as db:
        rows = db.execute(
            "SELECT * FROM campaign_jobs WHERE campaign_id = ? ORDER BY seq", (campaign_id,)
        ).fetchall()
    return [checked_row(store.path, "campaign_jobs", dict(r)) for r in rows]


# The columns of campaign_jobs a job's update may set (its status is always set).
JOB_COLUMNS = frozenset({"label", "servers_json", "study", "rating_id", "message"})


def update_job(
    store: ResultsStore, campaign_id: str, seq: int, status: str, columns: dict[str, Any]
) -> None:
    """Set a job's status and `columns` (values as stored), and its campaign's update time."""
    unknown = set(columns) - JOB_COLUMNS
    if unknown:
        raise ValueError(f"campaign_jobs has no column {sorted(unknown)}")
    sets = ["status = ?", *(f"{column} = ?" for column in columns)]
    with store.connect() as db:
        db.execute(
            f"UPDATE campaign_jobs SET {', '.join(sets)} WHERE campaign_id = ? AND seq = ?",
            (status, *columns.values(), campaign_id, seq),
        )
        db.execute("UPDATE campaigns SET updated = ? WHERE id = ?", (_now(), campaign_id))


def finish_campaign(store: ResultsStore, campaign_id: str, status: str, message: str) -> None:
    with store.connect() as db:
        db.execute(
            "UPDATE campaigns SET status = ?, message = ?, updated = ? WHERE id = ?",
            (status, message, _now(), campaign_id),
        )
