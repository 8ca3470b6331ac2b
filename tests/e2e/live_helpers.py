"""Helpers of the live-event and deck tests: free ports, polling with a deadline, processes
that are always ended (by PID)."""

import contextlib
import os
import signal
import socket
import subprocess
from functools import partial
from pathlib import Path

from tests.helpers import BGBENCH, wait_until

wait_for = partial(wait_until, poll_s=0.1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(args: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None):
    with log.open("wb") as out:
        return subprocess.Popen(
            [*BGBENCH, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            start_new_session=True,  # its agents in its group: ended with it
        )


def end(proc: subprocess.Popen, sig: int = signal.SIGINT, grace_s: float = 60.0) -> int:
    """End a process the test started (and its group), by its PID: `sig`, then SIGKILL."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode
