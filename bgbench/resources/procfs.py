"""The few /proc and cgroup files a process group is sampled from, read and parsed with
bounds (a file is read up to 4 KiB: each holds one line or a few). Linux only; a file that
cannot be read (the process is gone, no permission, no such kernel feature) reads as None.

- /proc/PID/stat: CPU ticks (utime + stime), threads, start time, RSS pages.
- /proc/PID/schedstat and /proc/PID/task/TID/schedstat: nanoseconds on a CPU, then
  nanoseconds runnable but waiting for one (the run-queue wait), then timeslices. The
  process's own file is its main thread's only: a process with threads is read per thread.
- /proc/PID/cgroup and the CPU quota of that cgroup and its ancestors: cgroup v2 cpu.max
  ("QUOTA PERIOD", or "max PERIOD": no quota), v1 cpu.cfs_quota_us / cpu.cfs_period_us.
"""

import os
from dataclasses import dataclass
from pathlib import Path

READ_BYTES = 4096
MAX_THREADS = 1024  # threads read per process (beyond: not counted)
MAX_DEPTH = 32  # cgroup ancestors walked
CGROUP_ROOT = Path("/sys/fs/cgroup")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def read(path: str, limit: int = READ_BYTES) -> str | None:
    """A small file's text (its first `limit` bytes), None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, limit).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Stat:
    cpu_ticks: int  # utime + stime, in clock ticks
    threads: int
    start: int  # clock ticks after boot: with the pid, who this process is
    rss_pages: int
    state: str = ""  # R, S, D, ... Z: a zombie (gone, not yet reaped)
    parent: int = 0


def parse_stat(text: str) -> Stat | None:
    """/proc/PID/stat; None when it is not one (the name, in parentheses, may hold spaces
    and parentheses itself: the fields start after the last ')')."""
    end = text.rfind(")")
    if end < 0:
        return None
    fields = text[end + 1 :].split()
    if len(fields) < 22:
        return None
    try:
        return Stat(
            cpu_ticks=int(fields[11]) + int(fields[12]),
            threads=max(1, int(fields[17])),
            start=int(fields[19]),
            rss_pages=max(0, int(fields[21])),
            state=fields[0][:1],
            parent=int(fields[1]),
        )
    except ValueError:
        return None


def parse_schedstat(text: str) -> tuple[int, int] | None:
    """(ns on a CPU, ns waiting in a run queue) from a schedstat file; None if malformed."""
    fields = text.split()
    if len(fields) < 2 or not (fields[0].isdigit() and fields[1].isdigit()):
        return None
    return int(fields[0]), int(fields[1])


def run_queue_waits(pid: int, threads: int) -> dict[int, int]:
    """Each thread's run-queue wait so far, ns, by thread id (the process's own file when
    it has one thread: one read instead of a directory and a read per thread)."""
    if threads <= 1:
        one = parse_schedstat(read(f"/proc/{pid}/schedstat") or "")
        return {} if one is None else {pid: one[1]}
    try:
        tids = os.listdir(f"/proc/{pid}/task")[:MAX_THREADS]
    except OSError:
        return {}
    waits = {}
    for tid in tids:
        one = parse_schedstat(read(f"/proc/{pid}/task/{tid}/schedstat") or "")
        if one is not None and tid.isdigit():
            waits[int(tid)] = one[1]
    return waits


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2 cpu.max -> cores its quota allows; None: no quota ("max") or malformed."""
    fields = text.split()
    if not fields or fields[0] == "max":
        return None
    try:
        quota = int(fields[0])
        period = int(fields[1]) if len(fields) > 1 else 100_000
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def parse_cfs(quota_text: str, period_text: str) -> float | None:
    """cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us -> cores; None: -1 (no quota)."""
    try:
        quota, period = int(quota_text.strip()), int(period_text.strip())
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def parse_cgroup(text: str) -> tuple[str | None, str | None]:
    """/proc/PID/cgroup -> (the v2 path, the v1 cpu controller's path); None: not there."""
    v2 = v1 = None
    for line in text.splitlines()[:64]:
        parts = line.split(":", 2)
        if len(parts) != 3 or not parts[2].startswith("/"):
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        elif "cpu" in parts[1].split(","):
            v1 = parts[2]
    return v2, v1


def cgroup_quota(pid: int, root: Path = CGROUP_ROOT) -> float | None:
    """The tightest CPU quota, in cores, on the process's cgroup or any ancestor of it
    (v2, whether mounted at the root or at unified/, and v1's cpu controller); None: none."""
    text = read(f"/proc/{pid}/cgroup")
    return None if text is None else quota_of(text, root)


def quota_of(cgroup: str, root: Path = CGROUP_ROOT) -> float | None:
    """The tightest CPU quota on the cgroups a /proc/PID/cgroup text names, or ancestors."""
    v2, v1 = parse_cgroup(cgroup)
    quotas = []
    if v2 is not None:
        for base in (root, root / "unified"):
            quotas += [parse_cpu_max(t) for t in _up(base, v2, "cpu.max")]
    if v1 is not None:
        for base in (root / "cpu", root / "cpu,cpuacct"):
            for d in _dirs_up(base, v1):
                quota = read(str(d / "cpu.cfs_quota_us"))
                period = read(str(d / "cpu.cfs_period_us"))
                if quota is not None and period is not None:
                    quotas.append(parse_cfs(quota, period))
    found = [q for q in quotas if q is not None]
    return min(found) if found else None


def _dirs_up(base: Path, path: str) -> list[Path]:
    parts = [p for p in path.split("/") if p and p not in (".", "..")][:MAX_DEPTH]
    return [base.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]


def _up(base: Path, path: str, name: str) -> list[str]:
    texts = (read(str(d / name)) for d in _dirs_up(base, path))
    return [t for t in texts if t is not None]


def cgroup_names(pid: int, needle: str) -> bool:
    """Whether the process's cgroup paths name `needle` (a container's id or name)."""
    text = read(f"/proc/{pid}/cgroup")
    return text is not None and needle in text
