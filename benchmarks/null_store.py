"""Framework overhead: actions/s per core of the load engine on the null store, logging on.

Runs `bgbench run --store null` through real agents over gRPC and divides each
agent's actions/s by the CPU its load processes used (in cores), so the figure is
what one core of client buys, independent of how many cores the machine has.

    .venv/bin/python benchmarks/null_store.py            # the default grid
    .venv/bin/python benchmarks/null_store.py --duration 20
"""

import argparse
import json
import subprocess
import sys
import tempfile

GRID = [
    # (agents, processes per agent, threads in all, mix)
    (1, 1, 1, "low"),
    (1, 1, 4, "low"),
    (1, 1, 16, "low"),
    (1, 2, 4, "low"),
    (2, 1, 4, "low"),
    (1, 1, 4, "sessions"),
]


def run(agents: int, processes: int, threads: int, mix: str, duration: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "bgbench",
                "run",
                "--store",
                "null",
                "--json",
                "--agents",
                str(agents),
                "--processes",
                str(processes),
                "--threads",
                str(threads),
                "--duration",
                str(duration),
                "--mix",
                mix,
                "--users",
                "10000",
                "--results",
                tmp,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0)
    args = parser.parse_args()
    print(f"null store, logging on, {args.duration:g} s per row, usercount 10000")
    print(
        f"{'agents':>6} {'procs':>5} {'T':>4} {'mix':>8} {'actions/s':>11} "
        f"{'CPU cores':>9} {'actions/s/core':>14} {'us CPU/action':>13} {'log records':>11}"
    )
    for agents, processes, threads, mix in GRID:
        r = run(agents, processes, threads, mix, args.duration)
        cores = sum(a["cpu_percent"] for a in r["agents"]) / 100
        per_core = r["actions_per_s"] / cores
        records = sum(a["log_records_written"] for a in r["agents"])
        print(
            f"{agents:>6} {processes:>5} {threads:>4} {mix:>8} {r['actions_per_s']:>11,.0f} "
            f"{cores:>9.2f} {per_core:>14,.0f} {1e6 / per_core:>13.1f} {records:>11,}"
        )


if __name__ == "__main__":
    main()
