"""Cassandra's part of benchmarks/nosql_drivers.py (run it from there: its docstring says
what is measured): the bare loops, bgbench's load process for the rounds, and the rounds."""

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from nosql_drivers import figures, row, server_cpu, timed_tasks

MAIN = str(Path(__file__).with_name("nosql_drivers.py"))
PROFILE_CQL = (
    "SELECT kind, count(other), attrs, pic, resources FROM {ks}.member WHERE mid = ? GROUP BY kind"
)


def member_loop(
    duration: float, users: int, view_profile: Callable[[int], Awaitable[Any]]
) -> Callable[[int], Awaitable[int]]:
    """A task's loop: View Profile of uniformly drawn members until `duration` passes;
    returns its count."""
    stop = time.monotonic() + duration

    async def one(i: int) -> int:
        rng, done = random.Random(i), 0
        while time.monotonic() < stop:
            if not await view_profile(rng.randrange(users)):
                raise SystemExit("View Profile found no member: load the keyspace first")
            done += 1
        return done

    return one


async def cassandra_driver_loop(
    hosts: list[str], port: int, keyspace: str, tasks: int, duration: float, users: int
) -> dict[str, float]:
    """cassandra-driver (or scylla-driver: the same module), tuple rows, the prepared
    View Profile statement, answers handed to the loop as bgbench's binding does."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.query import tuple_factory

    profile = ExecutionProfile(row_factory=tuple_factory, request_timeout=30)
    cluster = Cluster(hosts, port=port, protocol_version=5,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile})  # fmt: skip
    session = cluster.connect()
    statement = session.prepare(PROFILE_CQL.format(ks=keyspace))
    loop = asyncio.get_running_loop()
    post = loop.call_soon_threadsafe

    def resolve(fut: asyncio.Future[Any], value: Any) -> None:
        if not fut.done():
            fut.set_result(value)

    def reject(fut: asyncio.Future[Any], exc: BaseException) -> None:
        if not fut.done():
            fut.set_exception(exc)

    def ok(value: Any, fut: asyncio.Future[Any]) -> None:
        post(resolve, fut, value)

    def fail(exc: BaseException, fut: asyncio.Future[Any]) -> None:
        post(reject, fut, exc)

    async def view_profile(member: int) -> Any:
        rf = session.execute_async(statement, (member,))
        fut = loop.create_future()
        rf.add_callbacks(ok, fail, callback_args=(fut,), errback_args=(fut,))
        return await fut

    try:
        return await timed_tasks(tasks, duration, member_loop(duration, users, view_profile))
    finally:
        cluster.shutdown()


async def acsylla_loop(
    hosts: list[str], port: int, keyspace: str, tasks: int, duration: float, users: int
) -> dict[str, float]:
    import acsylla

    cluster = acsylla.create_cluster(hosts, port=port, protocol_version=4, request_timeout=30)
    session = await cluster.create_session(keyspace=keyspace)
    prepared = await session.create_prepared(PROFILE_CQL.format(ks=keyspace))

    async def view_profile(member: int) -> list[tuple[Any, ...]]:
        result = await session.execute(prepared.bind([member]))
        return [row.as_tuple() for row in result]

    try:
        return await timed_tasks(tasks, duration, member_loop(duration, users, view_profile))
    finally:
        await session.close()


CASSANDRA_LOOPS = {"cassandra-driver": cassandra_driver_loop, "acsylla": acsylla_loop}


def cassandra_loop_main(args: argparse.Namespace) -> None:
    """One bare loop, its figures as JSON on stdout (run in another environment too)."""
    import uvloop

    loop = CASSANDRA_LOOPS[args.driver]
    out = uvloop.run(
        loop(args.hosts.split(","), args.port, args.keyspace, args.tasks, args.duration,
             args.users)
    )  # fmt: skip
    print(json.dumps(out))


def bare_cassandra(python: str, driver: str, where: dict[str, Any], tasks: int,
                   duration: float, users: int) -> dict[str, float]:  # fmt: skip
    proc = subprocess.run(
        [python, MAIN, "cassandra-loop", "--driver", driver,
         "--hosts", ",".join(where["hosts"]), "--port", str(where["port"]),
         "--keyspace", where["keyspace"], "--tasks", str(tasks), "--duration", str(duration),
         "--users", str(users)],
        capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{driver} loop failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def bgbench_sweep(options: dict[str, Any], args: argparse.Namespace, results: str) -> dict:
    """`bgbench rate --objective sweep` over args.threads: the store loaded once and warmed
    up (a run right after loading finds Cassandra still flushing what it loaded), then
    one run per T. Each T's recorded experiment (its client CPU per action included)."""
    from harness import ResultsStore, bgbench

    sets = [x for k, v in options.items() for x in ("-p", f"store.options.{k}={v}")]
    threads = ",".join(map(str, args.threads))
    rated = bgbench(
        "rate", "--store", "cassandra", *sets, "-p", "agents.heartbeat_timeout=300",
        "--objective", "sweep", "--warmup", str(args.warmup),
        "-p", f"rating.sweep_threads=[{threads}]",
        "-p", "rating.sweep_repeats=1", "--delta", str(args.duration),
        "--agents", "1", "--processes", "1", "--users", str(args.users),
        "-p", 'bg.workload.mix={"VP": 1}', "--results", results,
    )  # fmt: skip
    store = ResultsStore.existing(Path(results))
    runs = [json.loads(e["result_json"]) for e in store.experiments(rated["rating_id"])]
    return {r["threads"]: r for r in runs}


def engine_main(args: argparse.Namespace) -> None:
    """bgbench's load process for the rounds: load the keyspace once (View Profile only),
    then for each stdin line `T DRIVER DURATION` run one experiment on that driver and
    print its figures as JSON (the process's CPU over the run's loop, every thread
    included, as a load process counts its own)."""
    import threading

    from bgbench.worker.engine import FragmentEngine, RunSpec
    from bgbench.workloads.bg.config import BGConfig
    from bgbench.workloads.bg.workload import WORKLOAD

    config = BGConfig.model_validate(
        {"database": {"usercount": args.users}, "workload": {"mix": {"VP": 1}}}
    )
    store = {"hosts": args.hosts.split(","), "port": args.port, "keyspace": args.keyspace}
    engine = FragmentEngine(WORKLOAD, config, "cassandra", store, (1.0,), 0)
    try:
        engine.prepare()
        print(json.dumps({"loaded": True}), flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            for k, line in enumerate(sys.stdin):
                t, driver, duration = line.split()
                engine.binding.options.driver = driver  # type: ignore[attr-defined]
                spec = RunSpec(f"e{k}", int(t), float(duration), 0, k, Path(tmp) / f"e{k}")
                r = engine.run(spec, threading.Event(), lambda *_: None)
                # the run's own figures, as bgbench reports them: its loop's elapsed time
                # and CPU (not the log's setup or the summary after it)
                out = figures(r.actions, r.cpu_seconds, r.elapsed)
                print(json.dumps({**out, "errors": r.errors}), flush=True)
    finally:
        engine.close()


def server_cpu_of(pid: int) -> float:
    return server_cpu(pid) if pid else 0.0


class EngineProcess:
    """bgbench's load process (engine_main) in a process of its own."""

    def __init__(self, where: dict[str, Any], users: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, MAIN, "cassandra-engine", "--hosts", ",".join(where["hosts"]),
             "--port", str(where["port"]), "--keyspace", where["keyspace"],
             "--users", str(users)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("bgbench's load process ended: see its error above")
        return json.loads(line)  # type: ignore[no-any-return]

    def run(self, t: int, driver: str, duration: float) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{t} {driver} {duration}\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(60)


def cassandra(args: argparse.Namespace, where: dict[str, Any], server_pid: int) -> None:
    """Rounds alternating the clients on one loaded keyspace (the order reversed every
    other round): every ratio is to the bare cassandra-driver loop of the same round and
    T; medians over the rounds at the end."""
    import importlib.util
    import statistics

    where = {**where, "keyspace": "bg_drivers"}
    print(f"Cassandra View Profile, {args.users:,} members, {args.duration:g} s per row, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    if args.rate:
        options = {"hosts": ",".join(where["hosts"]), "port": where["port"],
                   "keyspace": where["keyspace"]}  # fmt: skip
        for driver in ("acsylla", "cassandra-driver"):
            with tempfile.TemporaryDirectory() as tmp:
                for t, r in bgbench_sweep({**options, "driver": driver}, args, tmp).items():
                    row(f"bgbench rate ({driver})", t, r["actions_per_s"],
                        r["client_cpu_us_per_action"])  # fmt: skip
    engine = EngineProcess(where, args.users)
    clients: list[tuple[str, Callable[[int], dict[str, Any]]]] = [
        ("bare cassandra-driver loop", lambda t: bare_cassandra(
            sys.executable, "cassandra-driver", where, t, args.duration, args.users)),
        ("bgbench (cassandra-driver)", lambda t: engine.run(t, "cassandra-driver", args.duration)),
        ("bgbench (acsylla)", lambda t: engine.run(t, "acsylla", args.duration)),
    ]  # fmt: skip
    if importlib.util.find_spec("acsylla") is not None:
        clients.append(("bare acsylla loop", lambda t: bare_cassandra(
            sys.executable, "acsylla", where, t, args.duration, args.users)))  # fmt: skip
    if args.scylla:
        clients.append(("bare scylla-driver loop", lambda t: bare_cassandra(
            args.scylla, "cassandra-driver", where, t, args.duration, args.users)))  # fmt: skip
    try:
        engine.run(16, "acsylla", args.warmup)  # the freshly loaded keyspace settles
        print(f"{'':>6} {'client':>32} {'T':>4} {'actions/s':>10} {'us CPU/act':>10} "
              f"{'x bare':>8} {'server us':>10}")  # fmt: skip
        seen: dict[tuple[str, int], list[tuple[float, float, float, float]]] = {}
        for k in range(args.rounds):
            for t in args.threads:
                got = {}
                for name, run in clients if k % 2 == 0 else clients[::-1]:
                    s0 = server_cpu_of(server_pid)
                    f = run(t)
                    got[name] = (f, (server_cpu_of(server_pid) - s0) / max(f["ops"], 1) * 1e6)
                base = got["bare cassandra-driver loop"][0]["per_s"]
                for name, _ in clients:
                    f, server_us = got[name]
                    ratio = f["per_s"] / base
                    seen.setdefault((name, t), []).append(
                        (f["per_s"], f["us_cpu"], ratio, server_us)
                    )
                    print(f"{'r' + str(k + 1):>6} ", end="")
                    row(name, t, f["per_s"], f["us_cpu"], f"{ratio:.2f}x", f"{server_us:.1f}")
        for t in args.threads:
            for name, _ in clients:
                rate, us, ratio, server_us = (
                    statistics.median(col) for col in zip(*seen[name, t], strict=True)
                )
                print(f"{'median':>6} ", end="")
                row(name, t, rate, us, f"{ratio:.2f}x", f"{server_us:.1f}")
    finally:
        engine.close()
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
