"""Helpers shared by the test files: the `bgbench` command run as a user runs it, and
polling with a deadline."""

import os
import resource
import subprocess
import sys
import threading
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


def run_with_peak_rss(
    args: list[str], timeout: float, env: Mapping[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run `args` to the end (killed past `timeout`), its output read as it comes, and
    return it with its own peak resident size in KiB (os.wait4 of this child alone and the
    descendants it waited for: RUSAGE_CHILDREN would also count every earlier test's
    children in this worker, a JVM's included)."""
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        read: dict[str, str] = {}
        readers = [
            threading.Thread(target=lambda k=k, f=f: read.__setitem__(k, f.read()), daemon=True)
            for k, f in (("out", proc.stdout), ("err", proc.stderr))
        ]
        for reader in readers:
            reader.start()
        ended: list[tuple[int, int, resource.struct_rusage]] = []

        def reaped() -> bool:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                ended.append((pid, status, usage))
            return bool(pid)

        try:
            wait_until(reaped, f"{args[:4]} ending", timeout)
        except AssertionError:
            proc.kill()
            raise
        _, status, usage = ended[0]
        proc.returncode = os.waitstatus_to_exitcode(status)
        for reader in readers:
            reader.join()
    done = subprocess.CompletedProcess(args, proc.returncode, read["out"], read["err"])
    return done, int(usage.ru_maxrss)
