"""Validation speed: records/s per core in memory and out of core, at growing log sizes.

Synthetic logs (bgbench.validation.synthetic: BG's Zipfian over 100,000 items, 10%
writes, half the items delta and half absolute, 0.1% of reads stale by 50 ms) are
written as bgbench log files, then validated through the same runner `bgbench
validate` uses (reading the logs included). Rows "write" and "read" time the log format
alone: appending in a load thread's flush batches (32,768 records) and closing, and reading
every record back with its checks (block checksums, trailer, records).

Out of core runs with a memory budget of a quarter of the logs' size (--budget-share), in a
child process of its own so that its peak resident memory ("max RSS", the child's and
its forked workers', each at its peak) can be set against the budget ("budget MB"); the
child's resident memory before it validates (interpreter, numpy, initial values) is in
"base MB". Its counts must equal the in-memory path's (checked: the run stops if not).
With --baseline-site DIR (a `pip install --no-deps --target DIR` of another checkout,
e.g. main's), the same child runs that checkout's runner on the same logs in the same
run ("base" rows), for before/after side by side.

"seconds" is wall time and "per core" divides the rate by the workers; "cpu s" is the CPU
time (user + system) of the process and of the workers it forked, which a machine shared
with other work does not inflate the way it inflates wall time; "per cpu s" is records per
second of that CPU time (the rate per core on an idle machine). With --repeat N every row is
the run with the best wall time of N. Rows "visible" and "visible10" time the write
visibility step alone (validation/visibility.py), already included in the rows above, on
logs with 0.1% and 10% stale reads ("unpredictable": the reads it examines).

    .venv/bin/python benchmarks/validation.py                 # 1e5, 1e6, 1e7 records
    .venv/bin/python benchmarks/validation.py --sizes 100000 1000000 --repeat 3
    .venv/bin/python benchmarks/validation.py --sizes 10000000 --baseline-site /tmp/main-site
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from bgbench.validation.checker import Checked, check
from bgbench.validation.initial import load_initial, save_initial
from bgbench.validation.logformat import LogWriter, read_log
from bgbench.validation.runner import validate_logs
from bgbench.validation.synthetic import synthetic_logs
from bgbench.validation.visibility import visibility

COUNTS = ("reads", "unpredictable_reads", "writes", "sessions", "unpredictable_sessions",
          "never_valid")  # fmt: skip


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_resident_mb() -> float:
    """This process image's peak resident memory (VmHWM: unlike ru_maxrss, not carried over
    from the process that exec'd it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return max_rss_mb()


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


FLUSH_BATCH = 1 << 15  # a load thread hands its records over in batches of this many


def write_logs(records: np.ndarray, directory: Path, files: int = 4) -> list[Path]:
    paths = []
    for k, part in enumerate(np.array_split(records, files)):
        path = directory / f"log-f{k}.bglog"
        w = LogWriter(path)
        for lo in range(0, len(part), FLUSH_BATCH):
            w.append(part[lo : lo + FLUSH_BATCH])
        w.close()
        paths.append(path)
    return paths


def row(
    records: int,
    engine: str,
    workers: int,
    seconds: float,
    cpu: float,
    unpredictable: str,
    rss_mb: float | None = None,
    extra: str = "",
) -> str:
    rate = records / seconds
    rss = max_rss_mb() if rss_mb is None else rss_mb
    return (
        f"{records:>11,} {engine:>11} {workers:>7} {seconds:>8.2f} {cpu:>6.2f} {rate:>12,.0f} "
        f"{rate / workers:>12,.0f} {records / max(cpu, 1e-9):>12,.0f} {unpredictable:>13} "
        f"{rss:>10,.0f}{extra}"
    )


def timed(fn, repeat: int):
    """(result of the fastest run, its wall seconds, its cpu seconds)."""
    best = None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), cpu_seconds()
        out = fn()
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        if best is None or wall < best[1]:
            best = (out, wall, cpu)
    return best


HEADER = (
    f"{'records':>11} {'engine':>11} {'workers':>7} {'seconds':>8} {'cpu s':>6} "
    f"{'records/s':>12} {'per core':>12} {'per cpu s':>12} {'unpredictable':>13} "
    f"{'max RSS MB':>10}"
    f" {'budget MB':>9} {'base MB':>7}"
)


def read_all(paths: list[Path]) -> int:
    return sum(len(read_log(p)) for p in paths)


def child(log_dir: Path, budget: int, workers: int) -> None:
    """One validation of the logs in log_dir, in this (fresh) process: its figures as JSON."""
    paths = sorted(log_dir.glob("log-f*.bglog"))
    initial = load_initial(log_dir / "initial.npz", 1 << 40)
    base = peak_resident_mb()
    t0, c0 = time.perf_counter(), cpu_seconds()
    result, info = validate_logs(paths, initial, budget, workers, work_dir=log_dir)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    # forked workers: each one's peak, pages shared with this process included
    rss = max(peak_resident_mb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    figures = {"engine": info.engine, "records": info.records, "workers": info.workers,
               "wall": wall, "cpu": cpu, "rss_mb": rss, "base_mb": base,
               "counts": [getattr(result, k) for k in COUNTS]}  # fmt: skip
    print(json.dumps(figures))


def in_child(log_dir: Path, budget: int, workers: int, site: Path | None) -> dict:
    env = dict(os.environ)
    if site is not None:  # another checkout's bgbench, ahead of this one's
        env["PYTHONPATH"] = str(site)
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(log_dir), str(budget), str(workers)],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    figures: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def bench(n: int, repeat: int, budget_share: float, site: Path | None, visible: bool) -> None:
    records, initial = synthetic_logs(n)
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), cpu_seconds()
        paths = write_logs(records, Path(tmp))
        print(row(n, "write", 1, time.perf_counter() - t0, cpu_seconds() - c0, "-"), flush=True)
        save_initial(Path(tmp) / "initial.npz", initial)
        del records
        read, wall, cpu = timed(partial(read_all, paths), repeat)
        print(row(read, "read", 1, wall, cpu, "-"), flush=True)
        expected = None
        for workers in (1, 2):
            run = partial(validate_logs, paths, initial, 64 << 30, workers, work_dir=Path(tmp))
            (result, info), wall, cpu = timed(run, repeat)
            assert info.engine == "memory", info
            expected = [getattr(result, k) for k in COUNTS]
            unpredictable = f"{result.unpredictable_reads:,}"
            print(row(info.records, "memory", info.workers, wall, cpu, unpredictable), flush=True)
        budget = max(4 << 20, int(sum(p.stat().st_size for p in paths) / budget_share))
        sites = [("base", site)] if site is not None else []
        for label, where in [*sites, ("", None)]:
            for workers in (1,) if label else (1, 2):  # main's out of core: one process
                runs = [in_child(Path(tmp), budget, workers, where) for _ in range(repeat)]
                best = min(runs, key=lambda f: f["wall"])
                assert best["counts"] == expected, (best, expected)  # the in-memory answer
                name = f"{label} {best['engine']}".strip()[-11:]
                extra = f" {budget / 2**20:>9,.0f} {best['base_mb']:>7,.0f}"
                print(row(best["records"], name, best["workers"], best["wall"], best["cpu"],
                          f"{expected[1]:,}", best["rss_mb"], extra), flush=True)  # fmt: skip
    if visible:
        visibility_rows(n, repeat)


def visibility_rows(n: int, repeat: int) -> None:
    """The write-visibility step alone (validation/visibility.py, part of every validation
    above), after the checker, on one core: with the default 0.1% stale reads and with 10%."""
    for engine, stale in (("visible", 0.001), ("visible10", 0.1)):
        records, initial = synthetic_logs(n, stale_share=stale)
        checked = check(records, initial)

        def step(c: Checked = checked) -> int:
            return visibility(c.ix, c.init, c.bad, c.absolute_items).never_total

        _, wall, cpu = timed(step, repeat)
        bad = f"{int(checked.bad.sum()):,}"
        print(row(n, engine, 1, wall, cpu, bad), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=1, help="best wall time of this many runs")
    parser.add_argument("--budget-share", type=float, default=4.0,
                        help="out of core: a budget of the logs' size over this")  # fmt: skip
    parser.add_argument("--baseline-site", type=Path, help="another checkout's bgbench, installed")
    parser.add_argument("--no-visibility", action="store_true", help="skip the visible rows")
    parser.add_argument("--child", nargs=3, metavar=("LOGS", "BUDGET", "WORKERS"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), int(args.child[1]), int(args.child[2]))
        return
    print(HEADER)
    for n in args.sizes:
        bench(n, args.repeat, args.budget_share, args.baseline_site, not args.no_visibility)


if __name__ == "__main__":
    main()
