"""Helpers shared by the test files: the `bgbench` command run as a user runs it, and
polling with a deadline."""

import resource
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

BGBENCH = [sys.executable, "-m", "bgbench"]
T = TypeVar("T")


def bgbench(
    *args: str,
    timeout: float = 300,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    limit_file_bytes: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """`bgbench ARGS` to its end, its output captured (a failure is the caller's to judge).
    With `limit_file_bytes`, no file it writes may grow past that size (RLIMIT_FSIZE: writes
    beyond fail with EFBIG, as on a full disk)."""

    def limit() -> None:
        if limit_file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))

    return subprocess.run(
        [*BGBENCH, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
        check=False,
        preexec_fn=limit if limit_file_bytes is not None else None,
    )


def wait_until(
    condition: Callable[[], T],
    what: str,
    timeout: float = 300.0,
    *,
    poll_s: float = 0.05,
    log: Path | None = None,
) -> T:
    """Poll `condition` until it returns something truthy, and return that (never a fixed
    delay: the machine may be shared and busy). Past `timeout` seconds, fail naming `what`
    and showing the end of `log`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            shown = "\n" + log.read_text()[-3000:] if log else ""
            raise AssertionError(f"{what} did not happen within {timeout:g} s{shown}")
        time.sleep(poll_s)  # between polls, never as synchronisation
