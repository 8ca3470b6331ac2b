"""Resident memory of every bgbench process through a long null-store run at T = 1024.

    .venv/bin/python benchmarks/memory_soak.py                   # 600 s
    .venv/bin/python benchmarks/memory_soak.py --duration 60 --every 2

Starts `bgbench run --store null --threads T --duration D --events FILE` (local agents,
their load processes) and samples the resident set (psutil) of the coordinator and of
every process below it every few seconds until it ends; the events' progress ticks say
how far into the experiment each sample is. Prints the RSS of each process through the
run (a row per tenth of it), then per process its RSS once the run has settled (first
minute, or a quarter of a short run), at the end of the run, its maximum during the run
and over the whole command (loading and validation included), and the growth during the
run after it settled. Verdict: "flat" when no process grew by more than --bound MB (or
--bound-share of its size), "GROWS" otherwise, naming the worst.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

MB = 1 << 20
STOPPED_AFTER_S = 3.0  # progress ticks come every second while the load runs
ROLES = ("coordinator", "agent", "load process", "other")


@dataclass
class Series:
    role: str
    # (seconds into the experiment when it is running, else None; RSS bytes)
    samples: list[tuple[float | None, int]] = field(default_factory=list)

    def running(self, after: float = 0.0, before: float = float("inf")) -> list[tuple[float, int]]:
        return [(t, rss) for t, rss in self.samples if t is not None and after <= t < before]

    @property
    def peak(self) -> int:
        return max(rss for _t, rss in self.samples)


class RunClock:
    """How far into the experiment the run is, from the progress events appended to FILE;
    None before the first, and once they stop (the load has ended: validation, results)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.elapsed: float | None = None
        self.changed = 0.0  # monotonic time of the last new elapsed time

    def read(self) -> float | None:
        before = self.elapsed
        self._read()
        now = time.monotonic()
        if self.elapsed != before:
            self.changed = now
        return self.elapsed if now - self.changed < STOPPED_AFTER_S else None

    def _read(self) -> None:
        if self.path.exists():
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                for line in f:
                    if not line.endswith(b"\n"):
                        break  # half written: read it next time
                    self.offset += len(line)
                    event = json.loads(line)
                    if event["kind"] == "progress":
                        self.elapsed = event["elapsed_s"]
                    elif event["kind"] == "verdict":
                        self.elapsed = None


def role(proc: psutil.Process, root: int) -> str:
    if proc.pid == root:
        return "coordinator"
    cmd = " ".join(proc.cmdline())
    if "bgbench.worker.agent" in cmd:
        return "agent"
    if "spawn_main" in cmd:
        return "load process"
    return "other"  # multiprocessing's resource tracker, say


def sample(root: psutil.Process, series: dict[int, Series], elapsed: float | None) -> None:
    for proc in [root, *root.children(recursive=True)]:
        try:
            rss = proc.memory_info().rss
            if not rss:  # ended, not yet reaped
                continue
            if proc.pid not in series:
                series[proc.pid] = Series(role(proc, root.pid))
        except psutil.Error:  # gone between the listing and the reading
            continue
        series[proc.pid].samples.append((elapsed, rss))


def soak(threads: int, duration: float, every: float, extra: list[str]) -> dict[int, Series]:
    series: dict[int, Series] = {}
    with tempfile.TemporaryDirectory() as tmp:
        clock = RunClock(Path(tmp) / "events.jsonl")
        command = [
            sys.executable, "-m", "bgbench", "run", "--store", "null",
            "--threads", str(threads), "--duration", str(duration),
            "--users", str(max(10_000, 2 * threads)), "--results", tmp,
            "--events", str(clock.path), "--json", *extra,
        ]  # fmt: skip
        print("bgbench " + " ".join(command[3:]), file=sys.stderr, flush=True)
        out = Path(tmp) / "result.json"  # a file: a full pipe nobody reads would block it
        with open(out, "w") as sink:
            proc = subprocess.Popen(command, stdout=sink)
        try:
            root = psutil.Process(proc.pid)
            while proc.poll() is None:
                sample(root, series, clock.read())
                time.sleep(every)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode != 0:
            raise SystemExit(f"bgbench run exited {proc.returncode}")
        result = json.loads(out.read_text())
    print(
        f"{result['actions']:,} actions, {result['actions_per_s']:,.0f} actions/s over "
        f"{result['elapsed_s']:.0f} s",
        flush=True,
    )
    return series


def ordered(series: dict[int, Series]) -> list[tuple[int, Series]]:
    kept = [(pid, s) for pid, s in series.items() if s.running() and s.role != "other"]
    return sorted(kept, key=lambda kv: (ROLES.index(kv[1].role), kv[0]))


def timeline(series: dict[int, Series], duration: float) -> None:
    """RSS (MB) of each process through the run: its largest sample in each tenth."""
    procs = ordered(series)
    step = duration / 10
    print("RSS MB through the run, the largest sample of each tenth:")
    print(f"{'run s':>7} " + " ".join(f"{s.role[:12]:>12}" for _pid, s in procs))
    for k in range(10):
        cells = []
        for _pid, s in procs:
            inside = [rss for t, rss in s.running() if k * step <= t < (k + 1) * step]
            cells.append(f"{max(inside) / MB:>12.1f}" if inside else f"{'-':>12}")
        print(f"{(k + 1) * step:>7.0f} " + " ".join(cells))


def report(
    series: dict[int, Series], settle: float, duration: float, bound_mb: float, bound_share: float
) -> bool:
    """Print the table and the verdict; True when every process stayed flat."""
    print(
        f"{'process':>14} {'pid':>8} {f'at {settle:g} s':>9} {'run end':>8} {'run max':>8} "
        f"{'max':>8} {f'growth after {settle:g} s':>18}   (MB)"
    )
    worst: tuple[float, str] = (0.0, "")
    for pid, s in ordered(series):
        settled = s.running(settle, duration)  # the last tick's summaries are not the run
        if not settled:
            continue
        start, end = settled[0][1], settled[-1][1]
        run_max = max(rss for _t, rss in settled)
        growth = (run_max - start) / MB
        allowed = max(bound_mb, bound_share * start / MB)
        print(
            f"{s.role:>14} {pid:>8} {start / MB:>9.1f} {end / MB:>8.1f} {run_max / MB:>8.1f} "
            f"{s.peak / MB:>8.1f} {growth:>18.1f}"
        )
        if growth - allowed > worst[0]:
            worst = (growth - allowed, f"{s.role} {pid} grew {growth:.1f} MB after {settle:g} s")
    if worst[1]:
        print(f"GROWS: {worst[1]} (bound {bound_mb:g} MB or {bound_share:.0%})")
        return False
    print(
        f"flat: no process grew more than {bound_mb:g} MB or {bound_share:.0%} "
        f"during the run after {settle:g} s"
    )
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0)
    parser.add_argument("--threads", type=int, default=1024)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between samples")
    parser.add_argument(
        "--settle", type=float, help="seconds into the run before growth counts (60, or D/4)"
    )
    parser.add_argument("--bound", type=float, default=32.0, help="MB of growth called flat")
    parser.add_argument("--bound-share", type=float, default=0.1, help="or this share of RSS")
    parser.add_argument("bgbench_args", nargs="*", help="more `bgbench run` options (after --)")
    args = parser.parse_args()
    series = soak(args.threads, args.duration, args.every, args.bgbench_args)
    timeline(series, args.duration)
    settle = args.settle if args.settle is not None else min(60.0, args.duration / 4)
    if not report(series, settle, args.duration, args.bound, args.bound_share):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
