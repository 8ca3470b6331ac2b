"""The load engine measured against itself and against bare driver loops, side by side.

    .venv/bin/python benchmarks/engine.py null          # null store, T = 1 ... 4096
    .venv/bin/python benchmarks/engine.py postgres      # View Profile: bgbench vs bare loops
    .venv/bin/python benchmarks/engine.py sweep         # SQLite, PostgreSQL `low`, T = 2...1024
    .venv/bin/python benchmarks/engine.py all

- null: `bgbench run --store null` on one agent with one load process (logging on),
  socialites as tasks on the event loop (the default) and, in the same run, as threads
  (`store.options.concurrency=threads`, the engine blocking stores use): client CPU per
  action (the load process's CPU over the run / actions), p99 response time of reads and
  writes, the run's elapsed time against its duration, and the command's wall time.
- postgres: View Profile only, one agent, one load process, T = 16 and 256: bgbench
  (asyncpg on uvloop) against a bare loop of the same statement through the same driver
  at the same concurrency (N tasks on one uvloop loop, one asyncpg connection each), and
  a bare psycopg loop (one thread, prepared): throughput and client CPU per statement.
- sweep: the `low` mix at T = 2 ... 1024 on SQLite and PostgreSQL, 2 local agents with
  the layout chosen for each T (coordinator/execution/sizing.py): throughput, client CPU per
  action, p95 response time, load processes.

PostgreSQL is started on loopback by deploy/local/servers.py in a temporary directory
and stopped at the end.
"""

import argparse
import asyncio
import random
import resource
import tempfile
import time
from pathlib import Path

from harness import bgbench, new_database, servers

NULL_T = (1, 256, 1024, 4096)
SWEEP_T = (2, 8, 32, 128, 256, 512, 1024)
# deploy/local's PostgreSQL allows 300 connections and every socialite holds one (as BG's
# threads do), so its sweep stops below that.
POSTGRES_MAX_T = 256
READS = {"VP", "LF", "VFR", "VTR", "VCR"}


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def p99(result: dict, reads: bool) -> float:
    """The worst p99 over the read (or write) actions that ran."""
    values = [
        a["response"]["p99_ms"] for a in result["per_action"] if (a["action"] in READS) == reads
    ]
    return max(values, default=float("nan"))


def run(*args: str) -> tuple[dict, float]:
    t0 = time.monotonic()
    result = bgbench("run", *args)
    return result, time.monotonic() - t0


def null(duration: float) -> None:
    print(f"null store, 1 agent x 1 load process, logging on, {duration:g} s runs")
    print(
        f"{'engine':>8} {'T':>5} {'actions/s':>10} {'us CPU/act':>10} {'read p99 ms':>11} "
        f"{'write p99 ms':>12} {'elapsed s':>9} {'wall s':>7} {'delay p99 ms':>12}"
    )
    for t in NULL_T:
        for engine in ("tasks", "threads"):
            with tempfile.TemporaryDirectory() as tmp:
                args = ["--store", "null", "--agents", "1", "--processes", "1",
                        "--threads", str(t), "--duration", str(duration),
                        "--users", str(max(10_000, 2 * t)), "--results", tmp]  # fmt: skip
                if engine == "threads":
                    args += ["-p", "store.options.concurrency=threads"]
                r, wall = run(*args)
            agent = r["agents"][0]
            print(
                f"{engine:>8} {t:>5} {r['actions_per_s']:>10,.0f} "
                f"{r['client_cpu_us_per_action']:>10.2f} {p99(r, True):>11.3f} "
                f"{p99(r, False):>12.3f} {r['elapsed_s']:>9.2f} {wall:>7.1f} "
                f"{agent['client_delay_p99_ms']:>12.3f}",
                flush=True,
            )


def profile_sql(attrcount: int) -> str:
    from bgbench.workloads.bg.stores.postgres import view_profile_sql

    return view_profile_sql(attrcount, "$1")


async def asyncpg_loop(dsn: str, tasks: int, duration: float, users: int) -> tuple[int, float]:
    import asyncpg
    import uvloop  # noqa: F401 - the loop is uvloop's (asyncio.run below is given it)

    sql = profile_sql(10)
    conns = [await asyncpg.connect(dsn_url(dsn)) for _ in range(tasks)]
    done = 0
    stop = time.monotonic() + duration

    async def one(conn) -> None:  # type: ignore[no-untyped-def]
        nonlocal done
        rng = random.Random(id(conn))
        stmt = await conn.prepare(sql)
        while time.monotonic() < stop:
            await stmt.fetchrow(rng.randrange(users))
            done += 1

    c0, t0 = cpu_s(), time.monotonic()
    await asyncio.gather(*(one(c) for c in conns))
    cpu, elapsed = cpu_s() - c0, time.monotonic() - t0
    for c in conns:
        await c.close()
    return done, cpu / done * 1e6 if done else float("nan"), done / elapsed  # type: ignore[return-value]


def psycopg_loop(dsn: str, duration: float, users: int) -> tuple[int, float, float]:
    import psycopg

    sql = profile_sql(10).replace("$1", "%s")
    rng = random.Random(1)
    done = 0
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=0) as conn:
        c0, t0 = cpu_s(), time.monotonic()
        stop = t0 + duration
        while time.monotonic() < stop:
            conn.execute(sql, (rng.randrange(users),)).fetchone()
            done += 1
        cpu, elapsed = cpu_s() - c0, time.monotonic() - t0
    return done, cpu / done * 1e6, done / elapsed


def dsn_url(dsn: str) -> str:
    parts = dict(p.split("=", 1) for p in dsn.split())
    return (
        f"postgresql://{parts.get('user', 'postgres')}@{parts['host']}:{parts['port']}/"
        f"{parts['dbname']}"
    )


def postgres(server: dict, duration: float, users: int) -> None:
    import uvloop

    dsn = new_database(server)
    print(f"PostgreSQL View Profile, {users:,} members, {duration:g} s per row")
    print(f"{'client':>26} {'T':>4} {'actions/s':>10} {'us CPU/act':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for t in (16, 256):
            r, _wall = run(
                "--store", "postgres", "-p", f"store.options.dsn={dsn}",
                "--agents", "1", "--processes", "1", "--threads", str(t),
                "--duration", str(duration), "--users", str(users),
                "-p", 'bg.workload.mix={"VP": 1}', "--results", tmp,
            )  # fmt: skip
            print(
                f"{'bgbench (asyncpg)':>26} {t:>4} {r['actions_per_s']:>10,.0f} "
                f"{r['client_cpu_us_per_action']:>10.1f}",
                flush=True,
            )
            _done, us, rate = uvloop.run(asyncpg_loop(dsn, t, duration, users))
            print(f"{'bare asyncpg loop':>26} {t:>4} {rate:>10,.0f} {us:>10.1f}", flush=True)
        _done, us, rate = psycopg_loop(dsn, duration, users)
        print(f"{'bare psycopg loop, sync':>26} {1:>4} {rate:>10,.0f} {us:>10.1f}", flush=True)


def sweep(server: dict, duration: float, users: int) -> None:
    print(f"`low` mix, 2 local agents, layout by T, {users:,} members, {duration:g} s per row")
    print(
        f"{'store':>8} {'T':>5} {'procs':>5} {'actions/s':>10} {'us CPU/act':>10} "
        f"{'p95 ms':>8} {'delay p99 ms':>12}"
    )
    dsn = new_database(server)
    with tempfile.TemporaryDirectory() as tmp:
        for store, extra in (
            ("sqlite", ["-p", f"store.options.path={tmp}/bg.sqlite"]),
            ("postgres", ["-p", f"store.options.dsn={dsn}"]),
        ):
            for t in SWEEP_T:
                if store == "postgres" and t > POSTGRES_MAX_T:
                    break
                r, _wall = run(
                    "--store", store, *extra, "--threads", str(t), "--duration", str(duration),
                    "--users", str(users), "--mix", "low", "--results", tmp,
                )  # fmt: skip
                procs = sum(a["load_processes"] for a in r["agents"])
                delay = max(a["client_delay_p99_ms"] for a in r["agents"])
                print(
                    f"{store:>8} {t:>5} {procs:>5} {r['actions_per_s']:>10,.0f} "
                    f"{r['client_cpu_us_per_action']:>10.1f} {r['overall']['p95_ms']:>8.2f} "
                    f"{delay:>12.2f}",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["null", "postgres", "sweep", "all"])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--users", type=int, default=10_000)
    args = parser.parse_args()
    if args.what in ("null", "all"):
        null(args.duration)
    if args.what == "null":
        return
    with tempfile.TemporaryDirectory() as tmp:
        server = servers.start("postgres", Path(tmp) / "pg")
        try:
            if args.what in ("postgres", "all"):
                postgres(server, args.duration, args.users)
            if args.what in ("sweep", "all"):
                sweep(server, args.duration, args.users)
        finally:
            servers.stop(Path(tmp) / "pg")


if __name__ == "__main__":
    main()
