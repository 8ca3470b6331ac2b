"""`bgbench deck`: the web app (FastAPI), its routes and its token rule.

Every rating runs as a `bgbench` subprocess (deck_jobs.py); the deck edits and
checks settings files, starts, stops and resumes jobs, streams a job's events file as
server-sent events, and shows the results store.
"""

import asyncio
import json
import re
import secrets
import sqlite3
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse

from bgbench.coordinator.campaign import load_campaign
from bgbench.coordinator.campaign import records as campaign_records
from bgbench.coordinator.execution.checkconfig import check_settings_file
from bgbench.coordinator.interfaces import deck_html
from bgbench.coordinator.interfaces.deck_guard import HostRule, RequestGuard, new_csrf_token
from bgbench.coordinator.interfaces.deck_jobs import BGBENCH, Job, Jobs
from bgbench.coordinator.storage.results import DB_NAME, ResultsStore
from bgbench.errors import BGBenchError, UserError
from bgbench.inputs import open_output, read_bounded_text

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,80}\.(toml|yaml|yml)")  # whole names only
EVENT_ID = re.compile(r"[0-9]{1,15}")  # a byte offset into a job's events file
SETTINGS_LIMIT = 1 << 20  # bytes of one settings or campaign file the deck reads or saves
POLL_S = 0.25  # how often a stream looks for new lines of a job's events file
LOG_TAIL = 4000  # characters of a failed job's output shown on its page


@dataclass(frozen=True)
class DeckConfig:
    results: Path  # the results store's directory the jobs record into
    settings_dir: Path  # where edited settings files are saved
    hosts: HostRule  # the Host values it answers (its address, loopback names, --allow-host)
    token: str | None = None


class SettingsText(BaseModel):
    name: str = Field(max_length=200)
    text: str = Field(max_length=SETTINGS_LIMIT)
    kind: str = "rate"  # rate: a rating's settings; campaign: a campaign file


class StartJob(BaseModel):
    kind: str = Field(max_length=20)  # rate | campaign
    name: str = Field(max_length=200)
    metrics_port: int | None = None


def _nonce() -> str:
    return secrets.token_urlsafe(16)


def _html(content: str, nonce: str) -> HTMLResponse:
    policy = (
        f"default-src 'none'; connect-src 'self'; img-src 'self' data:; "
        f"style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; base-uri 'none'; "
        "form-action 'self'"
    )
    headers = {"Content-Security-Policy": policy, "Referrer-Policy": "no-referrer"}
    return HTMLResponse(content, headers=headers)


def check_campaign(name: str, text: str, directory: Path) -> str:
    """The campaign file `text` checked as `bgbench campaign check` does ("" when every job
    is valid, else the first error in one line). It is checked where it is saved, so the
    files it includes resolve the same."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", suffix=".yaml", prefix=".check-", dir=directory, encoding="utf-8"
    ) as f:
        f.write(text)
        f.flush()
        try:
            campaign = load_campaign(Path(f.name))
        except BGBenchError as exc:
            return str(exc).replace(f.name, name).splitlines()[0]
    if campaign.invalid:
        more = len(campaign.invalid) - 1
        first = campaign.invalid[0].error.replace(f.name, name).splitlines()[0]
        return first + (f" (and {more} more invalid jobs)" if more else "")
    return ""


def check_text(name: str, text: str) -> str:
    """The settings `text` (TOML or YAML by `name`) checked as check-config does: "" when
    valid, else the one-line error."""
    suffix = Path(name).suffix if NAME.fullmatch(name) else ".toml"
    with tempfile.TemporaryDirectory(prefix="bgbench-deck-") as tmp:
        path = Path(tmp) / f"settings{suffix}"
        path.write_text(text, encoding="utf-8")
        try:
            check_settings_file(path, [])
        except BGBenchError as exc:
            return str(exc).replace(f" in {path}", "").replace(str(path), name)
        except (ValueError, TypeError) as exc:  # a parser's own complaint
            return f"invalid settings: {exc}".splitlines()[0]
    return ""


def create_app(config: DeckConfig) -> FastAPI:
    jobs = Jobs(config.results, config.results / "deck" / "jobs")

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await asyncio.to_thread(jobs.close)  # every job it started, by PID

    app = FastAPI(title="bgbench deck", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.jobs = jobs
    app.state.csrf = csrf = new_csrf_token()
    app.add_middleware(RequestGuard, hosts=config.hosts, csrf=csrf, token=config.token)

    @app.exception_handler(BGBenchError)
    async def user_error(_: Request, exc: BGBenchError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=400)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        message = f"{where or 'request'}: {first.get('msg', 'not understood')}"
        return JSONResponse({"error": message.splitlines()[0]}, status_code=400)

    def settings_file(name: str) -> Path:
        if not NAME.fullmatch(name):
            raise UserError(
                f"settings name {name!r}: use letters, digits, '.', '-' or '_', ending in "
                ".toml, .yaml or .yml"
            )
        return config.settings_dir / name

    def saved_names() -> list[str]:
        if not config.settings_dir.is_dir():
            return []
        return sorted(p.name for p in config.settings_dir.iterdir() if NAME.fullmatch(p.name))

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        nonce = _nonce()
        content = deck_html.editor(saved_names(), list(jobs.jobs.values()), nonce, csrf)
        return _html(content, nonce)

    @app.get("/api/settings")
    def list_settings() -> dict[str, list[str]]:
        return {"names": saved_names()}

    @app.get("/api/settings/{name}")
    def read_settings(name: str) -> dict[str, str]:
        path = settings_file(name)
        if not path.is_file():
            raise UserError(f"no settings file {name} in {config.settings_dir}")
        return {"name": name, "text": read_bounded_text(path, SETTINGS_LIMIT, "settings file")}

    @app.post("/api/settings")
    def save_settings(body: SettingsText) -> dict[str, str]:
        path = settings_file(body.name)
        config.settings_dir.mkdir(parents=True, exist_ok=True)
        with open_output(path, "settings file") as f:  # never into a FIFO a user left there
            f.write(body.text)
        return {"name": body.name}

    def check(kind: str, name: str, text: str) -> str:
        if kind == "campaign":
            return check_campaign(name, text, config.settings_dir)
        return check_text(name, text)

    @app.post("/api/validate")
    def validate(body: SettingsText) -> dict[str, Any]:
        message = check(body.kind, body.name, body.text)
        return {"valid": not message, "message": message or "valid"}

    @app.get("/api/jobs")
    def list_jobs() -> dict[str, Any]:
        return {
            "jobs": [
                {"id": j.id, "kind": j.kind, "pid": j.pid, "status": j.status, "args": j.args}
                for j in jobs.jobs.values()
            ]
        }

    @app.post("/api/jobs")
    def start(body: StartJob) -> dict[str, Any]:
        path = settings_file(body.name)
        if not path.is_file():
            raise UserError(f"save {body.name} first: no such settings file")
        if body.kind not in ("rate", "campaign"):
            raise UserError(f"kind {body.kind!r}: start a rate or a campaign")
        text = read_bounded_text(path, SETTINGS_LIMIT, "settings file")
        problem = check(body.kind, body.name, text)
        if problem:
            raise UserError(problem)
        if body.kind == "rate":
            job = jobs.rate(path.absolute(), body.metrics_port)
        else:
            job = jobs.campaign(path.absolute(), body.metrics_port)
        return {"id": job.id, "pid": job.pid}

    @app.post("/api/jobs/{job_id}/stop")
    def stop(job_id: str) -> dict[str, Any]:
        job = jobs.stop(job_id)
        return {"id": job.id, "status": job.status}

    @app.post("/api/jobs/{job_id}/resume")
    def resume_job(job_id: str) -> dict[str, Any]:
        job = jobs.get(job_id)
        if job.returncode() is None:
            raise UserError(f"job {job_id} is still running: stop it first")
        rid = job.announced_id()
        if not rid:
            raise UserError(f"job {job_id} never started: start it again instead")
        new = jobs.resume_campaign(rid) if job.is_campaign else jobs.resume(rid)
        return {"id": new.id, "pid": new.pid}

    @app.post("/api/campaigns/{campaign_id}/resume")
    def resume_campaign(campaign_id: str) -> dict[str, Any]:
        job = jobs.resume_campaign(campaign_id)
        return {"id": job.id, "pid": job.pid}

    @app.post("/api/ratings/{rating_id}/resume")
    def resume_rating(rating_id: str) -> dict[str, Any]:
        job = jobs.resume(rating_id)
        return {"id": job.id, "pid": job.pid}

    @app.get("/api/jobs/{job_id}/stream")
    async def stream(job_id: str, request: Request) -> EventSourceResponse:
        job = jobs.get(job_id)
        given = request.headers.get("last-event-id", "")
        start_at = int(given) if EVENT_ID.fullmatch(given) else 0
        return EventSourceResponse(_follow(job, start_at, request))

    @app.get("/jobs/{job_id}", response_class=HTMLResponse)
    def job_page(job_id: str) -> HTMLResponse:
        nonce = _nonce()
        return _html(deck_html.job(jobs.get(job_id), nonce, csrf), nonce)

    @app.get("/ratings", response_class=HTMLResponse)
    def ratings_page() -> HTMLResponse:
        nonce = _nonce()
        rows, campaigns = _ratings(config.results), _campaigns(config.results)
        return _html(deck_html.ratings(rows, campaigns, nonce, csrf), nonce)

    @app.get("/ratings/{rating_id}/report", response_class=HTMLResponse)
    def report(rating_id: str) -> Response:
        ResultsStore.existing(config.results).rating(rating_id)  # a UserError if unknown
        return _report(rating_id, config.results)

    return app


def _ratings(results: Path) -> list[dict[str, Any]]:
    if not (results / DB_NAME).is_file():
        return []
    return ResultsStore(results).ratings()


def _campaigns(results: Path) -> list[dict[str, Any]]:
    if not (results / DB_NAME).is_file():
        return []
    try:
        return campaign_records.campaigns(ResultsStore(results))
    except sqlite3.OperationalError:  # a store from before campaigns
        return []


def _report(rating_id: str, results: Path) -> Response:
    """`bgbench report ID -o FILE.html`, served."""
    with tempfile.TemporaryDirectory(prefix="bgbench-report-") as tmp:
        out = Path(tmp) / f"{rating_id}.html"
        argv = [*BGBENCH, "report", rating_id, "-o", str(out), "--results", str(results)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0 or not out.is_file():
            line = (done.stderr.strip().splitlines() or ["no report written"])[-1]
            return JSONResponse({"error": f"bgbench report {rating_id}: {line}"}, status_code=500)
        content = out.read_text(encoding="utf-8")
    policy = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
    )
    return HTMLResponse(content, headers={"Content-Security-Policy": policy})


async def _follow(job: Job, offset: int, request: Request) -> AsyncIterator[dict[str, str]]:
    """The job's events file from `offset` (a byte offset, the SSE event id), line by line
    as it grows; then an `end` event with the exit code, and idle until the page leaves."""
    buffer = b""
    while True:
        code = job.returncode()  # before reading: what it wrote before exiting is read
        chunk = await asyncio.to_thread(_read_from, job.events, offset + len(buffer))
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            offset += len(line) + 1
            if line.strip():
                yield {"data": line.decode("utf-8", "replace"), "id": str(offset)}
        if not chunk:
            if code is not None:
                tail = await asyncio.to_thread(_tail, job.log)
                yield {"event": "end", "data": json.dumps({"returncode": code, "log_tail": tail})}
                break
            await asyncio.sleep(POLL_S)
    while not await request.is_disconnected():
        await asyncio.sleep(1.0)


def _read_from(path: Path, offset: int) -> bytes:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read(1 << 20)


def _tail(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL:]
    except OSError:
        return ""
