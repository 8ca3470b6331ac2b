"""Helpers shared by the test files: the `bgbench` command run as a user runs it."""

import resource
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

BGBENCH = [sys.executable, "-m", "bgbench"]


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
