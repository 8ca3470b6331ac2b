"""Cassandra, memcached and MongoDB drivers measured against each other and against
bgbench, side by side in one run (CASQL's value codec: benchmarks/casql_codec.py).

    .venv/bin/python benchmarks/nosql_drivers.py cassandra [--scylla PYTHON]
    .venv/bin/python benchmarks/nosql_drivers.py memcached
    .venv/bin/python benchmarks/nosql_drivers.py mongo

- cassandra: View Profile only, T = 16 and 256, in rounds that alternate the clients on
  one loaded keyspace: bgbench's load process (its engine and BG's binding, as an agent's
  load process runs them: one process that loads the keyspace once, then runs each
  experiment when told) with its socialites on acsylla (the default) and on
  cassandra-driver (store.options.driver), against bare loops of the same prepared
  statement at the same concurrency (N tasks on one uvloop loop, every row read):
  cassandra-driver through the same asyncio bridge the binding uses (execute_async,
  callbacks handed to the loop), acsylla (asyncio over the C++ driver), and with
  `--scylla PYTHON` scylla-driver (a drop-in fork of cassandra-driver with the same module
  name, so it runs from another environment: `python -m venv V && V/bin/pip install
  scylla-driver uvloop`). Each row also shows the server's CPU per action (the Cassandra
  process's, from /proc). `--rate` adds `bgbench rate --objective sweep` runs (loading,
  warm-up, one run per T, the whole command) before the rounds.
- memcached: a get/set loop (9 gets to 1 set of a 1 KB value, 10,000 keys) through
  pymemcache (blocking, one thread), aiomcache and emcache (N tasks on one uvloop loop,
  one connection per task as CASQL's socialites hold).
- mongo: find_one by _id on SecantusDB (a MongoDB-wire server written in Python: its CPU
  per operation, shown, dominates) through pymongo's blocking client (one thread), its
  AsyncMongoClient and motor (N tasks on one uvloop loop).

Client CPU per operation is this process's CPU (every thread, the drivers' I/O threads
included) over the loop divided by its operations; bgbench's is its load process's.
Servers are started on loopback by deploy/local/servers.py in a temporary directory and
stopped at the end (or named with --hosts/--port, --memcached, --mongo to reuse one).
"""

import argparse
import asyncio
import os
import random
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def figures(done: int, cpu: float, elapsed: float) -> dict[str, float]:
    return {
        "ops": done,
        "per_s": done / elapsed if elapsed else 0.0,
        "us_cpu": cpu / done * 1e6 if done else float("nan"),
    }


async def timed_tasks(tasks: int, duration: float, one: Callable[[int], Any]) -> dict[str, float]:
    """`tasks` coroutines `one(i)` (each loops until the deadline and returns its count)."""
    c0, t0 = cpu_s(), time.monotonic()
    counts = await asyncio.gather(*(one(i) for i in range(tasks)))
    return figures(sum(counts), cpu_s() - c0, time.monotonic() - t0)


def row(client: str, t: int, per_s: float, us: float, ratio: str = "", server: str = "") -> None:
    line = f"{client:>32} {t:>4} {per_s:>10,.0f} {us:>10.1f} {ratio:>8} {server:>10}"
    print(line.rstrip(), flush=True)


# -- memcached ---------------------------------------------------------------------------
KEYS = 10_000
VALUE = bytes(range(256)) * 4  # 1 KB
SET_EVERY = 10


def pymemcache_loop(port: int, duration: float) -> dict[str, float]:
    from pymemcache.client.base import Client

    client = Client(("127.0.0.1", port), default_noreply=False)
    rng, done = random.Random(1), 0
    c0, t0 = cpu_s(), time.monotonic()
    stop = t0 + duration
    while time.monotonic() < stop:
        key = b"k%d" % rng.randrange(KEYS)
        if done % SET_EVERY == 0:
            client.set(key, VALUE)
        else:
            client.get(key)
        done += 1
    out = figures(done, cpu_s() - c0, time.monotonic() - t0)
    client.close()
    return out


async def aiomcache_loop(port: int, tasks: int, duration: float) -> dict[str, float]:
    import aiomcache

    clients = [aiomcache.Client("127.0.0.1", port, pool_size=1) for _ in range(tasks)]
    stop = time.monotonic() + duration

    async def one(i: int) -> int:
        client, rng, done = clients[i], random.Random(i), 0
        while time.monotonic() < stop:
            key = b"k%d" % rng.randrange(KEYS)
            if done % SET_EVERY == 0:
                await client.set(key, VALUE)
            else:
                await client.get(key)
            done += 1
        return done

    try:
        return await timed_tasks(tasks, duration, one)
    finally:
        for c in clients:
            await c.close()


async def emcache_loop(port: int, tasks: int, duration: float) -> dict[str, float]:
    import emcache

    clients = [
        await emcache.create_client(
            [emcache.MemcachedHostAddress("127.0.0.1", port)], max_connections=1,
            min_connections=1, timeout=10,
        )
        for _ in range(tasks)
    ]  # fmt: skip
    stop = time.monotonic() + duration

    async def one(i: int) -> int:
        client, rng, done = clients[i], random.Random(i), 0
        while time.monotonic() < stop:
            key = b"k%d" % rng.randrange(KEYS)
            if done % SET_EVERY == 0:
                await client.set(key, VALUE)
            else:
                await client.get(key)
            done += 1
        return done

    try:
        return await timed_tasks(tasks, duration, one)
    finally:
        for c in clients:
            await c.close()


def memcached(args: argparse.Namespace, port: int) -> None:
    import importlib.util

    import uvloop

    print(f"memcached get/set (9:1, 1 KB values, {KEYS:,} keys), {args.duration:g} s per row, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'client':>32} {'T':>4} {'ops/s':>10} {'us CPU/op':>10}")
    f = pymemcache_loop(port, args.duration)
    row("pymemcache, blocking", 1, f["per_s"], f["us_cpu"])
    for t in args.threads:
        f = uvloop.run(aiomcache_loop(port, t, args.duration))
        row("aiomcache", t, f["per_s"], f["us_cpu"])
        if importlib.util.find_spec("emcache") is not None:
            f = uvloop.run(emcache_loop(port, t, args.duration))
            row("emcache", t, f["per_s"], f["us_cpu"])
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


# -- MongoDB -----------------------------------------------------------------------------
DOCS = 2_000


def server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mongo_seed(uri: str) -> None:
    import pymongo

    with pymongo.MongoClient(uri) as client:
        users = client.bg_drivers.users
        users.drop()
        users.insert_many([{"_id": i, "attrs": ["x" * 10] * 10, "confirmedFriends": list(range(20))}
                           for i in range(DOCS)])  # fmt: skip


def pymongo_sync_loop(uri: str, duration: float) -> dict[str, float]:
    import pymongo

    with pymongo.MongoClient(uri) as client:
        users = client.bg_drivers.users
        users.find_one({"_id": 0})
        rng, done = random.Random(1), 0
        c0, t0 = cpu_s(), time.monotonic()
        stop = t0 + duration
        while time.monotonic() < stop:
            if users.find_one({"_id": rng.randrange(DOCS)}) is None:
                raise SystemExit("find_one found nothing")
            done += 1
        return figures(done, cpu_s() - c0, time.monotonic() - t0)


async def async_mongo_loop(client: Any, tasks: int, duration: float) -> dict[str, float]:
    users = client.bg_drivers.users
    await users.find_one({"_id": 0})
    stop = time.monotonic() + duration

    async def one(i: int) -> int:
        rng, done = random.Random(i), 0
        while time.monotonic() < stop:
            if await users.find_one({"_id": rng.randrange(DOCS)}) is None:
                raise SystemExit("find_one found nothing")
            done += 1
        return done

    return await timed_tasks(tasks, duration, one)


async def pymongo_async_loop(uri: str, tasks: int, duration: float) -> dict[str, float]:
    from pymongo import AsyncMongoClient

    client: Any = AsyncMongoClient(uri)
    try:
        return await async_mongo_loop(client, tasks, duration)
    finally:
        await client.close()


async def motor_loop(uri: str, tasks: int, duration: float) -> dict[str, float]:
    from motor.motor_asyncio import AsyncIOMotorClient

    client: Any = AsyncIOMotorClient(uri)
    try:
        return await async_mongo_loop(client, tasks, duration)
    finally:
        client.close()


def mongo(args: argparse.Namespace, uri: str, pid: int) -> None:
    import importlib.util

    import uvloop

    mongo_seed(uri)
    print(f"SecantusDB find_one by _id ({DOCS:,} documents), {args.duration:g} s per row, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'client':>32} {'T':>4} {'ops/s':>10} {'us CPU/op':>10} {'server us/op':>12}")

    def show(name: str, t: int, run: Callable[[], dict[str, float]]) -> None:
        s0 = server_cpu(pid)
        f = run()
        server = (server_cpu(pid) - s0) / f["ops"] * 1e6 if f["ops"] else float("nan")
        print(f"{name:>32} {t:>4} {f['per_s']:>10,.0f} {f['us_cpu']:>10.1f} {server:>12.1f}",
              flush=True)  # fmt: skip

    show("pymongo MongoClient, blocking", 1, lambda: pymongo_sync_loop(uri, args.duration))
    for t in args.threads:
        show("pymongo AsyncMongoClient", t,
             lambda t=t: uvloop.run(pymongo_async_loop(uri, t, args.duration)))  # fmt: skip
        if importlib.util.find_spec("motor") is not None:
            show("motor", t, lambda t=t: uvloop.run(motor_loop(uri, t, args.duration)))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


# -- servers and the command line -----------------------------------------------------------
def started(kind: str, tmp: Path) -> tuple[dict[str, Any], Callable[[], None]]:
    from harness import servers

    info = servers.start(kind, tmp / kind)
    return info, lambda: servers.stop(tmp / kind)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["cassandra", "memcached", "mongo", "codec",
                                         "cassandra-loop", "cassandra-engine"])  # fmt: skip
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--users", type=int, default=2_000)
    parser.add_argument("--threads", type=lambda s: [int(t) for t in s.split(",")],
                        default=[16, 256])  # fmt: skip
    parser.add_argument("--scylla", help="a Python with scylla-driver (and uvloop) installed")
    parser.add_argument("--warmup", type=float, default=20.0, help="cassandra: warm-up, s")
    parser.add_argument("--rounds", type=int, default=3, help="cassandra: rounds")
    parser.add_argument("--rate", action="store_true", help="cassandra: bgbench rate first")
    parser.add_argument("--server-pid", type=int, default=0, help="--hosts' Cassandra pid")
    parser.add_argument("--hosts", default="", help="a running Cassandra's contact points")
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--memcached", type=int, help="a running memcached's port")
    parser.add_argument("--mongo", help="a running mongo-wire server: PORT:PID")
    parser.add_argument("--driver", choices=["acsylla", "cassandra-driver"])  # cassandra-loop
    parser.add_argument("--keyspace", default="bg_drivers")  # cassandra-loop
    parser.add_argument("--tasks", type=int, default=16)  # cassandra-loop
    args = parser.parse_args()
    from nosql_cassandra import cassandra, cassandra_loop_main, engine_main

    if args.what == "cassandra-loop":
        cassandra_loop_main(args)
        return
    if args.what == "cassandra-engine":
        engine_main(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        stop = None
        try:
            if args.what == "cassandra":
                pid = args.server_pid
                if args.hosts:
                    where = {"hosts": args.hosts.split(","), "port": args.port}
                else:
                    info, stop = started("cassandra", Path(tmp))
                    where = {"hosts": info["hosts"], "port": info["port"]}
                    pid = info["pids"][0]
                cassandra(args, where, pid)
            elif args.what == "memcached":
                if args.memcached:
                    port = args.memcached
                else:
                    info, stop = started("memcached", Path(tmp))
                    port = info["port"]
                memcached(args, port)
            else:
                if args.mongo:
                    port, pid = (int(x) for x in args.mongo.split(":"))
                else:
                    info, stop = started("mongo-wire", Path(tmp))
                    port, pid = info["port"], info["pid"]
                mongo(args, f"mongodb://127.0.0.1:{port}", pid)
        finally:
            if stop is not None:
                stop()


if __name__ == "__main__":
    main()
