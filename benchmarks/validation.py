"""Validation speed: records/s per core in memory and out of core, at growing log sizes.

Synthetic logs (bgbench.validation.synthetic: BG's Zipfian over 100,000 items, 10%
writes, half the items delta and half absolute, 0.1% of reads stale by 50 ms) are
written as bgbench log files, then validated through the same runner `bgbench
validate` uses (reading the logs included). Out of core runs with a memory budget of a
quarter of the logs' size. "max RSS" is the benchmark process's peak so far (it only grows
down the table). Rows "write" and "read" time the log format alone: appending in a load
thread's flush batches (32,768 records) and closing, and reading every record back with its
checks (block checksums, trailer, records).

"seconds" is wall time and "per core" divides the rate by the workers; "cpu s" is the CPU
time (user + system) of this process and of the workers it forked, which a machine shared
with other work does not inflate the way it inflates wall time. With --repeat N every row is
the run with the best wall time of N. Rows "visible" and "visible10" time the write
visibility step alone (validation/visibility.py), already included in the rows above, on
logs with 0.1% and 10% stale reads ("unpredictable": the reads it examines).

    .venv/bin/python benchmarks/validation.py                 # 1e5, 1e6, 1e7 records
    .venv/bin/python benchmarks/validation.py --sizes 100000 1000000 --repeat 3
"""

import argparse
import os
import resource
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from bgbench.validation.checker import Checked, check
from bgbench.validation.logformat import LogWriter, read_log
from bgbench.validation.runner import validate_logs
from bgbench.validation.synthetic import synthetic_logs
from bgbench.validation.visibility import visibility


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
    records: int, engine: str, workers: int, seconds: float, cpu: float, unpredictable: str
) -> str:
    rate = records / seconds
    return (
        f"{records:>11,} {engine:>8} {workers:>7} {seconds:>8.2f} {cpu:>6.2f} {rate:>12,.0f} "
        f"{rate / workers:>12,.0f} {unpredictable:>13} {max_rss_mb():>10,.0f}"
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
    f"{'records':>11} {'engine':>8} {'workers':>7} {'seconds':>8} {'cpu s':>6} "
    f"{'records/s':>12} {'per core':>12} {'unpredictable':>13} {'max RSS MB':>10}"
)


def read_all(paths: list[Path]) -> int:
    return sum(len(read_log(p)) for p in paths)


def bench(n: int, repeat: int) -> None:
    records, initial = synthetic_logs(n)
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), cpu_seconds()
        paths = write_logs(records, Path(tmp))
        print(row(n, "write", 1, time.perf_counter() - t0, cpu_seconds() - c0, "-"), flush=True)
        del records
        read, wall, cpu = timed(partial(read_all, paths), repeat)
        print(row(read, "read", 1, wall, cpu, "-"), flush=True)
        log_bytes = sum(p.stat().st_size for p in paths)
        # out of core: a budget of a quarter of the logs' size forces the DuckDB path
        runs = [("memory", 1, 64 << 30), ("memory", 2, 64 << 30)]
        runs.append(("duckdb", 1, max(4 << 20, log_bytes // 4)))
        for engine, workers, budget in runs:
            run = partial(validate_logs, paths, initial, budget, workers, work_dir=Path(tmp))
            (result, info), wall, cpu = timed(run, repeat)
            assert info.engine == engine, info
            unpredictable = f"{result.unpredictable_reads:,}"
            print(row(info.records, engine, info.workers, wall, cpu, unpredictable), flush=True)
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
    args = parser.parse_args()
    print(HEADER)
    for n in args.sizes:
        bench(n, args.repeat)


if __name__ == "__main__":
    main()
