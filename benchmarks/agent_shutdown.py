"""How long an agent takes to exit after SIGTERM in the middle of a run (target: < 5 s),
on an idle machine and beside stress-ng burning every core.

    .venv/bin/python benchmarks/agent_shutdown.py [--runs 5] [--threads 256]

Each run starts `bgbench run` (2 local agents x 2 load processes, null store), waits until
every fragment's log of the experiment exists, sends SIGTERM to one agent and times until
it and its load processes are gone.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

BGBENCH = [sys.executable, "-m", "bgbench"]


def agents_of(pid: int) -> list[psutil.Process]:
    out = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if "bgbench.worker.agent" in " ".join(child.cmdline()):
                out.append(child)
        except psutil.Error:
            continue
    return out


def one_run(threads: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        coordinator = subprocess.Popen(
            [*BGBENCH, "run", "--store", "null", "--agents", "2", "--processes", "2",
             "--threads", str(threads), "--duration", "120", "--results", tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while len(list(Path(tmp).rglob("log-f*.bglog"))) < 4:
                if time.monotonic() > deadline:
                    raise RuntimeError("the run did not start")
                time.sleep(0.05)
            victim = agents_of(coordinator.pid)[0]
            family = [victim, *victim.children(recursive=True)]
            t0 = time.monotonic()
            victim.terminate()
            _, alive = psutil.wait_procs(family, timeout=60)
            took = time.monotonic() - t0
            if alive:
                raise RuntimeError(f"{len(alive)} processes still alive after 60 s")
            return took
        finally:
            others = agents_of(coordinator.pid)
            coordinator.kill()
            coordinator.wait(30)
            for p in others:
                p.kill()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=256)
    args = parser.parse_args()
    rows = []
    for load in ("idle", "stress-ng --cpu 2"):
        stress = None
        if load != "idle":
            if not shutil.which("stress-ng"):
                print("stress-ng is not installed: apt-get install stress-ng", file=sys.stderr)
                break
            stress = subprocess.Popen(["stress-ng", "--cpu", "2", "--timeout", "600s", "-q"])
        try:
            times = [one_run(args.threads) for _ in range(args.runs)]
        finally:
            if stress is not None:
                stress.terminate()
                stress.wait(30)
        rows.append((load, times))
    print(f"SIGTERM to exit, agent with 2 load processes mid-run, null store, T={args.threads}")
    print(f"{'machine':>18} {'runs':>5} {'min s':>7} {'median s':>9} {'max s':>7}")
    for load, times in rows:
        times.sort()
        print(f"{load:>18} {len(times):>5} {times[0]:>7.2f} {times[len(times) // 2]:>9.2f} "
              f"{times[-1]:>7.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
