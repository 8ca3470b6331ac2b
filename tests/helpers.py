"""Helpers shared by the test files: the `bgbench` command run as a user runs it, and
polling with a deadline."""

import os
import resource
import signal
import subprocess
import sys
import tempfile
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


# Runs a command and writes its peak resident size (KiB, with the descendants it waited
# for) to a file: a fresh interpreter forks it, since a child's ru_maxrss starts from its
# parent's size at the fork (Linux keeps the pre-exec high-water mark), and an xdist
# worker may have grown past a gigabyte in earlier tests.
PEAK_RSS_WRAPPER = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code if code >= 0 else 128 - code)
"""


def run_with_peak_rss(
    args: list[str], timeout: float, env: Mapping[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run `args` to the end (its process group killed past `timeout`) and return it with
    its own peak resident size in KiB (see PEAK_RSS_WRAPPER)."""
    with tempfile.TemporaryDirectory() as scratch:
        peak_file = Path(scratch) / "peak-rss-kib"
        wrapped = [sys.executable, "-c", PEAK_RSS_WRAPPER, str(peak_file), *args]
        with subprocess.Popen(
            wrapped, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            start_new_session=True,
        ) as proc:  # fmt: skip
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                raise
        done = subprocess.CompletedProcess(args, proc.returncode, out, err)
        return done, int(peak_file.read_text())
