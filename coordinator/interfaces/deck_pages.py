"""The deck's HTML pages: the editor, a job's page, the ratings and campaigns in the
results store, and a rating's report."""

import os
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse, Response

from bgbench.coordinator.campaign import records as campaign_records
from bgbench.coordinator.interfaces import deck_html
from bgbench.coordinator.interfaces.deck_jobs import BGBENCH
from bgbench.coordinator.interfaces.deck_state import Deck, html_page, new_nonce
from bgbench.coordinator.storage.location import Location, NoResultsStore, for_child
from bgbench.coordinator.storage.results import DB_NAME, ResultsStore

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def index(deck: Deck) -> HTMLResponse:
    nonce = new_nonce()
    jobs = list(deck.jobs.jobs.values())
    return html_page(deck_html.editor(deck.saved_names(), jobs, nonce, deck.csrf), nonce)


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(job_id: str, deck: Deck) -> HTMLResponse:
    nonce = new_nonce()
    return html_page(deck_html.job(deck.jobs.get(job_id), nonce, deck.csrf), nonce)


@router.get("/ratings", response_class=HTMLResponse)
def ratings_page(deck: Deck) -> HTMLResponse:
    nonce = new_nonce()
    results = deck.config.where
    rows, campaigns = _ratings(results), _campaigns(results)
    return html_page(deck_html.ratings(rows, campaigns, nonce, deck.csrf), nonce)


@router.get("/ratings/{rating_id}/report", response_class=HTMLResponse)
def report(rating_id: str, deck: Deck) -> Response:
    ResultsStore.existing(deck.config.where).rating(rating_id)  # a UserError if unknown
    return _report(rating_id, deck.config.where)


def _store(results: Location) -> ResultsStore | None:
    """The store the deck reads (None: nothing recorded there yet)."""
    if isinstance(results, Path) and not (results / DB_NAME).is_file():
        return None
    try:
        return ResultsStore.existing(results)
    except NoResultsStore:
        return None


def _ratings(results: Location) -> list[dict[str, Any]]:
    store = _store(results)
    return store.ratings() if store is not None else []


def _campaigns(results: Location) -> list[dict[str, Any]]:
    store = _store(results)
    if store is None:
        return []
    try:
        return campaign_records.campaigns(store)
    except sqlite3.OperationalError:  # a store from before campaigns
        return []


def _report(rating_id: str, results: Location) -> Response:
    """`bgbench report ID -o FILE.html`, served."""
    arg, env = for_child(results)  # a URL's password in the environment, not in argv
    with tempfile.TemporaryDirectory(prefix="bgbench-report-") as tmp:
        out = Path(tmp) / f"{rating_id}.html"
        argv = [*BGBENCH, "report", rating_id, "-o", str(out), "--results", arg]
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env={**os.environ, **env},
        )
        if done.returncode != 0 or not out.is_file():
            line = (done.stderr.strip().splitlines() or ["no report written"])[-1]
            return JSONResponse({"error": f"bgbench report {rating_id}: {line}"}, status_code=500)
        content = out.read_text(encoding="utf-8")
    policy = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
    )
    return HTMLResponse(content, headers={"Content-Security-Policy": policy})
