"""Helpers of the live-event and deck tests: free ports, polling with a deadline, processes
that are always ended (by PID)."""

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tests.helpers import BGBENCH

DEADLINE_S = 300.0  # generous: the machine is shared and busy
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(condition: Callable[[], T], what: str, deadline_s: float = DEADLINE_S) -> T:
    """Poll `condition` until it returns something truthy; fail naming `what` at the deadline."""
    end = time.monotonic() + deadline_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"gave up after {deadline_s:g} s waiting for {what}")
        time.sleep(0.1)  # between polls, never as synchronisation


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
