"""What sampling a host costs an agent per progress tick (target: under 1% of one core at
0.5 s): HostSampler + the load processes' group + the store's group, the store a real
PostgreSQL holding 1, 32 and 256 connections (so its group has about 7, 38 and 262
processes), found by discovery from the load processes' connections.

    .venv/bin/python benchmarks/resources.py [--connections 1 32 256] [--seconds 20]
    .venv/bin/python benchmarks/resources.py --node-exporter [--scrapes 40]

Two load processes (python children) hold the connections between them. The benchmark
ticks every 0.5 s, as an agent does, for `--seconds`; membership refreshes (every 3 s,
discovery included) fall inside, so the mean per tick carries their share. CPU is this
process's (single-threaded: time.process_time) per tick; "wall" is the tick's elapsed time
(larger on a busy machine: the reads wait for a core). "first" is the first tick, whose
discovery reads every socket of the host once.

With --node-exporter: what scraping one node_exporter costs the coordinator (NodeExporter:
HTTP GET, the wanted series picked out and parsed, rates), a real prometheus-node-exporter
on loopback (its own collection is the wall time's larger part, in its process).
"""

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bgbench.launchers import servers  # noqa: E402
from bgbench.resources.host import HostSampler  # noqa: E402
from bgbench.resources.node_exporter import NodeExporter  # noqa: E402
from bgbench.resources.processes import ProcessGroup, StoreWatch  # noqa: E402

TICK_S = 0.5
T = TypeVar("T")
HOLD = (
    "import psycopg, sys\n"
    "conns = [psycopg.connect(sys.argv[1]) for _ in range(int(sys.argv[2]))]\n"
    "print('connected', flush=True)\n"
    "sys.stdin.read()\n"
)


def holders(port: int, connections: int) -> list[subprocess.Popen[str]]:
    dsn = f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    shares = [connections - connections // 2, connections // 2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", HOLD, dsn, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in shares
    ]
    for proc in procs:
        if proc.stdout is None or proc.stdout.readline().strip() != "connected":
            raise RuntimeError("a load process could not connect")
    return procs


def timed(f: Callable[..., T], into: list[float], *args: object) -> T:
    began = time.process_time()
    out = f(*args)
    into.append(time.process_time() - began)
    return out


def measure(port: int, connections: int, seconds: float) -> dict[str, float]:
    load_procs = holders(port, connections)
    try:
        pids = [p.pid for p in load_procs]
        host, load = HostSampler(), ProcessGroup.of_pids(lambda: pids)
        store = ProcessGroup.store(StoreWatch(), lambda: pids)
        costs: dict[str, list[float]] = {"host": [], "load": [], "store": []}
        walls, processes = [], 0
        deadline = time.monotonic() + seconds
        next_tick = time.monotonic()
        while time.monotonic() < deadline:
            began = time.perf_counter()
            load_sample = timed(load.sample, costs["load"])
            store_sample = timed(store.sample, costs["store"])
            timed(host.sample, costs["host"], 0.0, load_sample, store_sample)
            walls.append(time.perf_counter() - began)
            processes = max(processes, store_sample.processes if store_sample else 0)
            next_tick += TICK_S
            time.sleep(max(0.0, next_tick - time.monotonic()))
    finally:
        for proc in load_procs:
            proc.kill()
            proc.wait(10)
    ticks = len(walls)
    cpu = [sum(c) for c in zip(*costs.values(), strict=True)]
    return {
        "connections": connections,
        "processes": processes,
        "ticks": ticks,
        **{k: sum(v[1:]) / (ticks - 1) * 1e6 for k, v in costs.items()},
        "cpu": sum(cpu[1:]) / (ticks - 1) * 1e6,
        "wall": sum(walls[1:]) / (ticks - 1) * 1e6,
        "first": cpu[0] * 1e3,
        "refresh": max(cpu[1:]) * 1e3,
    }


def scrapes(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = servers.start("node-exporter", Path(tmp))
        try:
            watch = NodeExporter(server["endpoint"])
            watch.sample(0.0)
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(count):
                sample = watch.sample(0.0)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        finally:
            servers.stop(Path(tmp))
    print(f"node_exporter scrape, {count} scrapes, {sample.cores} cores")
    print(f"{'CPU ms/scrape':>14} {'wall ms/scrape':>15} {'% core at 0.5 s':>16}")
    print(
        f"{cpu / count * 1e3:14.2f} {wall / count * 1e3:15.1f} {cpu / count / TICK_S * 100:15.2f}%"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 32, 256])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--node-exporter", action="store_true")
    parser.add_argument("--scrapes", type=int, default=40)
    args = parser.parse_args()
    if args.node_exporter:
        scrapes(args.scrapes)
        return
    with tempfile.TemporaryDirectory() as tmp:
        server = servers.start("postgres", Path(tmp))
        try:
            rows = [measure(server["port"], n, args.seconds) for n in args.connections]
        finally:
            servers.stop(Path(tmp))
    print(f"sampling per tick, {TICK_S} s ticks, CPU of the sampling thread (us)")
    print(
        f"{'conns':>6} {'store procs':>11} {'ticks':>6} {'host':>7} {'load':>7} {'store':>7} "
        f"{'CPU/tick':>9} {'wall/tick':>10} {'% core':>9} {'first ms':>10} {'max tick ms':>11}"
    )
    for r in rows:
        share = r["cpu"] / 1e6 / TICK_S * 100
        print(
            f"{r['connections']:6.0f} {r['processes']:11.0f} {r['ticks']:6.0f} {r['host']:7.0f} "
            f"{r['load']:7.0f} {r['store']:7.0f} {r['cpu']:9.0f} {r['wall']:10.0f} "
            f"{share:8.2f}% {r['first']:10.1f} {r['refresh']:11.1f}"
        )


if __name__ == "__main__":
    main()
