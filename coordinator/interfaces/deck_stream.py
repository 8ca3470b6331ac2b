"""The deck's event stream: a job's events file as server-sent events, followed as it
grows."""

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import APIRouter, Request
from sse_starlette import EventSourceResponse

from bgbench.coordinator.interfaces.deck_jobs import Job
from bgbench.coordinator.interfaces.deck_state import Deck

EVENT_ID = re.compile(r"[0-9]{1,15}")  # a byte offset into a job's events file
POLL_S = 0.25  # how often a stream looks for new lines of a job's events file
LOG_TAIL = 4000  # characters of a failed job's output shown on its page

router = APIRouter()


@router.get("/api/jobs/{job_id}/stream")
async def stream(job_id: str, request: Request, deck: Deck) -> EventSourceResponse:
    job = deck.jobs.get(job_id)
    given = request.headers.get("last-event-id", "")
    start_at = int(given) if EVENT_ID.fullmatch(given) else 0
    return EventSourceResponse(_follow(job, start_at, request))


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
