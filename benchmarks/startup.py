"""Start-up, timed against a bare interpreter and, with --baseline, against another checkout
in the same run (the two alternate, so both see the same machine).

    .venv/bin/python benchmarks/startup.py                       # --help and agents, 7 rounds
    .venv/bin/python benchmarks/startup.py --baseline ../main    # a checkout with its .venv
    .venv/bin/python benchmarks/startup.py --runs --repeats 2    # also whole `bgbench run`s

- bare: `python -c pass`, the floor every command pays.
- help: `bgbench --help`; run-help: `bgbench run --help` (what a command imports before
  it does anything).
- agent ready: from spawning `python -m bgbench.worker.agent` to its answer to a gRPC
  Handshake; agent stop: from SIGTERM to its exit, its load processes started.
- runs (--runs): the wall time of `bgbench run --duration 10` on the null store and on
  SQLite (2 local agents, the defaults), and on the null store at T=4096 with 100,000
  members, each in a fresh temporary directory.

Medians (and minimums) per tree; the load average before and after is printed, since
absolute times on a shared machine move with it: the ratio in one run is what counts.
"""

import argparse
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import grpc

from bgbench.protos import AGENT_READY_LINE, PROTOCOL_VERSION
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc

HERE = Path(__file__).resolve().parent.parent
RUNS = {
    "run null 10 s": ["--store", "null", "--duration", "10"],
    "run sqlite 10 s": ["--store", "sqlite", "--duration", "10"],
    "run null T=4096 100k 10 s": [
        "--store",
        "null",
        "--threads",
        "4096",
        "--users",
        "100000",
        "--duration",
        "10",
    ],
}


def timed(args: list[str], cwd: Path | None = None) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - t0
    if proc.returncode != 0:  # shown, and counted as no figure (nan), not as a time
        last = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        print(f"{' '.join(args[:4])}...: exit {proc.returncode}: {last[0][:300]}", flush=True)
        return math.nan
    return took


def agent_ready_and_stop(python: str) -> tuple[float, float]:
    """Seconds from spawn to a Handshake reply; from SIGTERM (after a Prepare-free warm
    agent has had a second to start its load process) to exit."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [python, "-m", "bgbench.worker.agent", "--listen", "127.0.0.1:0", "--work-dir", tmp],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert proc.stdout is not None
            address = ""
            for line in proc.stdout:
                if line.startswith(AGENT_READY_LINE):
                    address = line[len(AGENT_READY_LINE) :].strip()
                    break
            if not address:
                raise SystemExit(f"agent exited with {proc.wait()} before serving")
            with grpc.insecure_channel(address) as channel:
                reply = pb_grpc.WorkerStub(channel).Handshake(
                    pb.HandshakeRequest(protocol_version=PROTOCOL_VERSION), timeout=60
                )
            ready = time.perf_counter() - t0
            assert reply.protocol_version == PROTOCOL_VERSION
            time.sleep(1.0)  # measured: how long it takes to stop, not a synchronisation
            t1 = time.perf_counter()
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
            return ready, time.perf_counter() - t1
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def run_wall(bgbench: str, args: list[str]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        return timed([bgbench, "run", *args, "--results", str(Path(tmp) / "results")], Path(tmp))


def measures(tree: Path, with_runs: bool) -> dict[str, Callable[[], float]]:
    python, bgbench = str(tree / ".venv/bin/python"), str(tree / ".venv/bin/bgbench")
    ready_stop: dict[str, float] = {}

    def ready() -> float:
        ready_stop["ready"], ready_stop["stop"] = agent_ready_and_stop(python)
        return ready_stop["ready"]

    found: dict[str, Callable[[], float]] = {
        "bare interpreter": lambda: timed([python, "-c", "pass"]),
        "bgbench --help": lambda: timed([bgbench, "--help"]),
        "bgbench run --help": lambda: timed([bgbench, "run", "--help"]),
        "agent ready (handshake)": ready,
        "agent stop (SIGTERM)": lambda: ready_stop["stop"],
    }
    if with_runs:
        for name, args in RUNS.items():
            found[name] = lambda args=args: run_wall(bgbench, args)  # type: ignore[misc]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="another checkout, with its own .venv")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runs", action="store_true", help="also whole `bgbench run`s")
    args = parser.parse_args()
    trees = {"this": HERE}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), "this": HERE}
    print(f"load average before: {os.getloadavg()}", flush=True)
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):
        for label, tree in trees.items():
            for name, measure in measures(tree, args.runs).items():
                times.setdefault((name, label), []).append(measure())
    print(f"load average after:  {os.getloadavg()}")
    names = list(measures(HERE, args.runs))
    header = "".join(f"{label + ' median':>17} {'min':>7}" for label in trees)
    print(f"{'seconds, ' + str(args.repeats) + ' rounds':<28}{header}")
    for name in names:
        cells = "".join(
            f"{statistics.median(times[name, label]):17.3f} {min(times[name, label]):7.3f}"
            if not any(map(math.isnan, times[name, label]))
            else f"{'failed ' + str(sum(map(math.isnan, times[name, label]))):>17} {'':7}"
            for label in trees
        )
        print(f"{name:<28}{cells}", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
