"""What a rating costs beyond its measured runs: README command 1 (SQLite), all CPU counted.

    .venv/bin/python benchmarks/experiment_cost.py
    .venv/bin/python benchmarks/experiment_cost.py -- --store null    # extra rate arguments

Runs `bgbench rate --delta-search 2 --delta 4` in a subprocess and takes the CPU of the
whole process tree (the coordinator, its agents and their load processes, all waited for)
from RUSAGE_CHILDREN. The load processes' CPU inside each measured run comes from each
experiment's record (cpu_percent of the agents over the run's elapsed time). What is left,
divided by the experiments, is what one experiment costs outside its measured run:
starting interpreters and loading (once per rating), readying, starting the socialites,
flushing, summarising, validating, merging and recording.
"""

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bgbench.coordinator.storage.results import ResultsStore


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    extra = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    with tempfile.TemporaryDirectory() as tmp:
        cpu0, t0 = children_cpu(), time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "bgbench", "rate", "--delta-search", "2", "--delta", "4",
             "--results", tmp, "--json", *extra],
            capture_output=True, text=True, cwd=tmp, check=False,
        )  # fmt: skip
        total, wall = children_cpu() - cpu0, time.monotonic() - t0
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        rating = json.loads(proc.stdout)
        experiments = [
            json.loads(e["result_json"])
            for e in ResultsStore(Path(tmp)).experiments(rating["rating_id"])
        ]
    in_runs = sum(a["cpu_percent"] / 100 * e["elapsed_s"] for e in experiments for a in e["agents"])
    run_wall = sum(e["elapsed_s"] for e in experiments)
    n = len(experiments)
    print(
        f"rating {rating['rating_id']}: SoAR {rating['soar']:,.0f} at "
        f"T={rating['soar_threads']}, Socialites {rating['socialites']}"
    )
    print(f"{'experiments':>28} {n:>8}")
    print(f"{'wall s (all / in runs)':>28} {wall:>8.1f} {run_wall:>8.1f}")
    print(f"{'CPU s, whole tree':>28} {total:>8.1f}")
    print(f"{'CPU s, load procs in runs':>28} {in_runs:>8.1f}")
    print(f"{'CPU s per experiment beyond':>28} {(total - in_runs) / n:>8.2f}")


if __name__ == "__main__":
    main()
