"""`bgbench deck`: the web app (FastAPI): the request guard in front of every route, then
the routers by concern.

Every rating runs as a `bgbench` subprocess (deck_jobs.py); the deck edits and checks
settings files (deck_settings.py), starts, stops and resumes jobs (deck_job_routes.py),
streams a job's events file as server-sent events (deck_stream.py), and shows the results
store (deck_pages.py). What the routes share is one `DeckState` on `app.state`
(deck_state.py).
"""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from bgbench.coordinator.interfaces import deck_job_routes, deck_pages, deck_settings, deck_stream
from bgbench.coordinator.interfaces.deck_guard import RequestGuard, new_csrf_token
from bgbench.coordinator.interfaces.deck_jobs import Jobs
from bgbench.coordinator.interfaces.deck_state import SETTINGS_LIMIT, DeckConfig, DeckState
from bgbench.errors import BGBenchError

__all__ = ["SETTINGS_LIMIT", "DeckConfig", "create_app"]


async def _user_error(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=400)


async def _bad_request(_: Request, exc: Exception) -> JSONResponse:
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    first = errors[0] if errors else {}
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
    message = f"{where or 'request'}: {first.get('msg', 'not understood')}"
    return JSONResponse({"error": message.splitlines()[0]}, status_code=400)


def create_app(config: DeckConfig) -> FastAPI:
    jobs = Jobs(config.where, config.results / "deck" / "jobs")

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await asyncio.to_thread(jobs.close)  # every job it started, by PID

    app = FastAPI(title="bgbench deck", lifespan=lifespan, docs_url=None, redoc_url=None)
    csrf = new_csrf_token()
    app.state.deck = DeckState(config=config, jobs=jobs, csrf=csrf)
    app.state.jobs, app.state.csrf = jobs, csrf  # as before the routers, for the tests' use
    app.add_middleware(RequestGuard, hosts=config.hosts, csrf=csrf, token=config.token)
    app.add_exception_handler(BGBenchError, _user_error)
    app.add_exception_handler(RequestValidationError, _bad_request)
    for router in (
        deck_pages.router,
        deck_settings.router,
        deck_job_routes.router,
        deck_stream.router,
    ):
        app.include_router(router)
    return app
