"""The deck's job routes: list, start, stop and resume ratings and campaigns, each a
`bgbench` subprocess (deck_jobs.py)."""

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from bgbench.coordinator.interfaces.deck_settings import check
from bgbench.coordinator.interfaces.deck_state import SETTINGS_LIMIT, Deck
from bgbench.errors import UserError
from bgbench.inputs import read_bounded_text

router = APIRouter()


class StartJob(BaseModel):
    kind: str = Field(max_length=20)  # rate | campaign
    name: str = Field(max_length=200)
    metrics_port: int | None = None


@router.get("/api/jobs")
def list_jobs(deck: Deck) -> dict[str, Any]:
    return {
        "jobs": [
            {"id": j.id, "kind": j.kind, "pid": j.pid, "status": j.status, "args": j.args}
            for j in deck.jobs.jobs.values()
        ]
    }


@router.post("/api/jobs")
def start(body: StartJob, deck: Deck) -> dict[str, Any]:
    path = deck.settings_file(body.name)
    if not path.is_file():
        raise UserError(f"save {body.name} first: no such settings file")
    if body.kind not in ("rate", "campaign"):
        raise UserError(f"kind {body.kind!r}: start a rate or a campaign")
    text = read_bounded_text(path, SETTINGS_LIMIT, "settings file")
    problem = check(deck, body.kind, body.name, text)
    if problem:
        raise UserError(problem)
    if body.kind == "rate":
        job = deck.jobs.rate(path.absolute(), body.metrics_port)
    else:
        job = deck.jobs.campaign(path.absolute(), body.metrics_port)
    return {"id": job.id, "pid": job.pid}


@router.post("/api/jobs/{job_id}/stop")
def stop(job_id: str, deck: Deck) -> dict[str, Any]:
    job = deck.jobs.stop(job_id)
    return {"id": job.id, "status": job.status}


@router.post("/api/jobs/{job_id}/resume")
def resume_job(job_id: str, deck: Deck) -> dict[str, Any]:
    job = deck.jobs.get(job_id)
    if job.returncode() is None:
        raise UserError(f"job {job_id} is still running: stop it first")
    rid = job.announced_id()
    if not rid:
        raise UserError(f"job {job_id} never started: start it again instead")
    new = deck.jobs.resume_campaign(rid) if job.is_campaign else deck.jobs.resume(rid)
    return {"id": new.id, "pid": new.pid}


@router.post("/api/campaigns/{campaign_id}/resume")
def resume_campaign(campaign_id: str, deck: Deck) -> dict[str, Any]:
    job = deck.jobs.resume_campaign(campaign_id)
    return {"id": job.id, "pid": job.pid}


@router.post("/api/ratings/{rating_id}/resume")
def resume_rating(rating_id: str, deck: Deck) -> dict[str, Any]:
    job = deck.jobs.resume(rating_id)
    return {"id": job.id, "pid": job.pid}
