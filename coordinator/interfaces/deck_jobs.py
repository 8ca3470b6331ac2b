"""What the deck runs: `bgbench` subprocesses, each in a process group of its own.

The deck never rates in its own process. A job is one `bgbench rate` (or campaign)
command writing its live events to a file of its own; stopping it sends SIGINT to its
process group (bgbench records an interrupted rating); closing the deck stops every job
it started, by the PID recorded at spawn.
"""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bgbench.coordinator.storage.location import Location, for_child
from bgbench.errors import UserError

RUN_ID = re.compile(
    r"[A-Za-z0-9_-]{1,64}"
)  # a rating's or campaign's id, e.g. R20260101-120000-ab12
BGBENCH = [sys.executable, "-m", "bgbench"]
STOP_GRACE_S = 20.0  # after SIGINT, how long a job may take to record itself


@dataclass
class Job:
    id: str
    kind: str  # rate | resume | campaign | campaign-resume
    args: list[str]
    pid: int
    events: Path
    log: Path
    started: float = field(default_factory=time.time)
    process: subprocess.Popen[bytes] | None = None

    def returncode(self) -> int | None:
        return self.process.poll() if self.process is not None else None

    @property
    def status(self) -> str:
        code = self.returncode()
        return "running" if code is None else f"exited {code}"

    def announced_id(self) -> str:
        """The rating (or, for a campaign job, the campaign) id its events announced."""
        kind, key = ("rating_start", "rating_id")
        if self.is_campaign:
            kind, key = ("campaign_start", "campaign_id")
        try:
            with self.events.open(encoding="utf-8") as f:
                for line in f:
                    event = json.loads(line) if line.endswith("\n") else {}
                    if event.get("kind") == kind:
                        return str(event[key])
        except (OSError, ValueError):
            pass
        return ""

    @property
    def is_campaign(self) -> bool:
        return self.kind.startswith("campaign")


class Jobs:
    """The subprocesses of one deck."""

    def __init__(self, results: Location, work: Path) -> None:
        self.results, self.env = for_child(results)  # a URL's password in the environment
        self.work = work  # events and logs of the jobs
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def _spawn(self, kind: str, args: list[str]) -> Job:
        self.work.mkdir(parents=True, exist_ok=True)
        with self._lock:
            job_id = f"J{len(self.jobs) + 1}-{time.strftime('%H%M%S')}"
            events = self.work / f"{job_id}.events.jsonl"
            log = self.work / f"{job_id}.log"
            events.touch()
            argv = [*BGBENCH, *args, "--events", str(events)]
            with log.open("wb") as out:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: SIGINT reaches all of it
                    env={**os.environ, **self.env},
                )
            job = Job(job_id, kind, argv[len(BGBENCH) :], process.pid, events, log)
            job.process = process
            self.jobs[job_id] = job
        return job

    def rate(self, settings_file: Path, metrics_port: int | None = None) -> Job:
        args = ["rate", "-c", str(settings_file), "--results", self.results]
        return self._spawn("rate", args + _metrics(metrics_port))

    def resume(self, rating_id: str, metrics_port: int | None = None) -> Job:
        _check_id(rating_id)
        args = ["rate", "--resume", rating_id, "--results", self.results]
        return self._spawn("resume", args + _metrics(metrics_port))

    def campaign(self, file: Path, metrics_port: int | None = None) -> Job:
        args = ["campaign", "run", str(file), "--results", self.results]
        return self._spawn("campaign", args + _metrics(metrics_port))

    def resume_campaign(self, campaign_id: str, metrics_port: int | None = None) -> Job:
        _check_id(campaign_id)
        args = ["campaign", "run", "--resume", campaign_id, "--results", self.results]
        return self._spawn("campaign-resume", args + _metrics(metrics_port))

    def get(self, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise UserError(f"no job {job_id} in this deck: see its front page for the jobs")
        return job

    def stop(self, job_id: str) -> Job:
        """SIGINT to the job's process group: bgbench records an interrupted rating."""
        job = self.get(job_id)
        if job.returncode() is None:
            _signal_group(job.pid, signal.SIGINT)
        return job

    def close(self) -> None:
        """Stop every job still running (SIGINT, then SIGKILL after STOP_GRACE_S), by PID."""
        running = [j for j in self.jobs.values() if j.returncode() is None]
        for job in running:
            _signal_group(job.pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_GRACE_S
        for job in running:
            assert job.process is not None
            try:
                job.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(job.pid, signal.SIGKILL)
                job.process.wait()


def _metrics(port: int | None) -> list[str]:
    return ["--metrics-port", str(port)] if port else []


def _check_id(value: str) -> None:
    if not RUN_ID.fullmatch(value):
        raise UserError(f"{value!r} is not a rating or campaign id: copy one from the ratings")


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)  # the group the job leads (start_new_session)
