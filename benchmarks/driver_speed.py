"""View Profile through bgbench against a bare loop of the same statements through the same
driver, at the same concurrency, in one run.

    .venv/bin/python benchmarks/driver_speed.py postgres          # T = 16 and 256
    .venv/bin/python benchmarks/driver_speed.py sqlite            # T = 1 and 16
    .venv/bin/python benchmarks/driver_speed.py all --rounds 3 --baseline ../main-checkout

- postgres: `bgbench run --store postgres` with only View Profile, one agent, one load
  process (asyncpg on uvloop, one connection per socialite task), against N tasks on one
  uvloop loop, one asyncpg connection each, running the same statement (prepared) with a
  member drawn at random ("bare asyncpg"), and the same tasks calling bgbench's binding
  (its PostgresAsyncConnection.view_profile) without the engine ("binding alone"): bare to
  binding is the binding's cost, binding to bgbench the engine's.
- sqlite: `bgbench run --store sqlite` with only View Profile, one agent, one load process
  (one thread per socialite), against N threads, one sqlite3 connection each (opened as
  the binding opens its own: busy timeout, cache size, synchronous=NORMAL), running View
  Profile's statements (the profile row, the friend count, the resource count, and the
  pending count when a member views its own profile) on the same database file, and the
  same threads through bgbench's SQLiteConnection ("binding alone"). Both draw as bgbench
  does: the requester claimed exclusively and the member viewed, each from BG's D-Zipfian
  distribution (zipfianmean 0.27) over the one fragment, in batches from numpy. "bare,
  uniform draws" is the bare loop drawing members uniformly, as it did before.

Each row: throughput (every action of the run over its elapsed time, as the bare loop
counts), client CPU per action (the load process's CPU over the run divided by its actions;
the bare loop's process CPU over its loop), and the ratio to the bare loop of
the same round. Every client runs in a process of its own. `--baseline DIR` adds bgbench
and its binding from another checkout (its own .venv) to every round: before and after
side by side. Rounds alternate the clients; the medians
are printed at the end. PostgreSQL is started on loopback by deploy/local/servers.py in a
temporary directory and stopped at the end.
"""

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness import new_database, servers

from bgbench.drivers.postgres_options import PostgresOptions
from bgbench.drivers.sqlite import open_database
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.stores.options import SQLiteOptions
from bgbench.workloads.bg.stores.sqlite import SQLiteBinding

ATTRS = 10  # BG's default attrcount: the statements are built for it
PG_T = (16, 256)
SQLITE_T = (1, 16)


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def bgbench_run(python: str, store: str, option: str, t: int, duration: float, users: int) -> dict:
    """One `bgbench run` of View Profile alone with `python` (a checkout's interpreter)."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [python, "-m", "bgbench", "run", "--store", store, "-p", option,
                "--agents", "1", "--processes", "1", "--threads", str(t),
                "--duration", str(duration), "--users", str(users),
                "-p", 'bg.workload.mix={"VP": 1}', "--results", tmp, "--json"]  # fmt: skip
        proc = subprocess.run(args, capture_output=True, text=True, cwd=tmp)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    r = json.loads(proc.stdout)
    # all of the run's actions over its elapsed time, as the bare loops count theirs
    return {"rate": r["actions"] / r["elapsed_s"], "us": r["client_cpu_us_per_action"]}


def asyncpg_dsn(dsn: str) -> str:
    parts = dict(p.split("=", 1) for p in dsn.split())
    return (
        f"postgresql://{parts.get('user', 'postgres')}@{parts['host']}:{parts['port']}/"
        f"{parts['dbname']}"
    )


async def asyncpg_loop(dsn: str, tasks: int, duration: float, users: int, kind: str) -> dict:
    """N tasks on this uvloop loop, one connection each: `bare` calls the statement prepared
    on an asyncpg connection, `binding` calls bgbench's PostgreSQL connection (no engine)."""
    import asyncpg

    from bgbench.workloads.bg.stores.postgres import PostgresBinding, view_profile_sql

    conns, calls = [], []
    if kind == "bare":
        for _ in range(tasks):
            conns.append(await asyncpg.connect(asyncpg_dsn(dsn)))
            stmt = await conns[-1].prepare(view_profile_sql(ATTRS))
            calls.append(lambda m, stmt=stmt: stmt.fetchrow(m))
    else:
        binding = PostgresBinding(PostgresOptions(dsn=dsn))
        binding.use_schema(BGDatabaseConfig(attrcount=ATTRS))
        for _ in range(tasks):
            conns.append(await binding.connect_async())
            calls.append(lambda m, c=conns[-1]: c.view_profile(m + 1, m))
    done = 0
    stop = time.monotonic() + duration

    async def one(call, seed: int) -> None:  # type: ignore[no-untyped-def]
        nonlocal done
        rng = random.Random(seed)
        while time.monotonic() < stop:
            await call(rng.randrange(users))
            done += 1

    c0, t0 = cpu_s(), time.monotonic()
    await asyncio.gather(*(one(c, i) for i, c in enumerate(calls)))
    cpu, elapsed = cpu_s() - c0, time.monotonic() - t0
    for c in conns:
        await c.close()
    return {"rate": done / elapsed, "us": cpu / done * 1e6}


SQLITE_PROFILE = [
    "SELECT {attrs}, u.pic FROM users u WHERE u.userid = ?",
    "SELECT (SELECT count(*) FROM friendship WHERE inviterid = ?1 AND status = 2)"
    " + (SELECT count(*) FROM friendship WHERE inviteeid = ?1 AND status = 2)",
    "SELECT count(*) FROM resources WHERE walluserid = ?",
]
SQLITE_PENDING = "SELECT count(*) FROM friendship WHERE inviteeid = ? AND status = 1"
DRAW_BATCH = 1024  # as bgbench's drawer (workloads/bg/workload.py)


class Draws:
    """Members drawn as bgbench's socialites draw them: BG's D-Zipfian over the one
    fragment (every member, zipfianmean 0.27), in numpy batches; the requester is claimed
    so that no two threads act as the same member at once (as BGState.acquire_socialite)."""

    def __init__(self, users: int) -> None:
        import numpy as np

        from bgbench.workloads.bg.config import BGWorkloadConfig
        from bgbench.workloads.zipf import LocalZipf

        self.np = np
        self.zipf = LocalZipf(np.arange(users), BGWorkloadConfig().zipfianmean, users)
        self.active: dict[int, object] = {}

    def drawer(self, seed: int):  # type: ignore[no-untyped-def]
        rng = self.np.random.default_rng(seed)
        zipf, buf = self.zipf, []

        def draw() -> int:
            nonlocal buf
            if not buf:
                buf = zipf.draw(rng, DRAW_BATCH).tolist()
            return buf.pop()  # type: ignore[no-any-return]

        return draw

    def claim(self, draw) -> int:  # type: ignore[no-untyped-def]
        while True:  # dict.setdefault is atomic: the claim needs no lock
            m = draw()
            if self.active.setdefault(m, draw) is draw:
                return m

    def release(self, m: int) -> None:
        del self.active[m]


def sqlite_loop(path: str, threads: int, duration: float, users: int, kind: str) -> dict:
    """N threads, one connection each: `bare` runs the statements on a sqlite3 connection,
    `binding` calls bgbench's SQLite connection (no engine)."""
    attrs = ", ".join(f"u.attr{i}" for i in range(ATTRS))
    profile, friends, resources = (s.replace("{attrs}", attrs) for s in SQLITE_PROFILE)
    draws = Draws(users)
    counts = [0] * threads
    go = threading.Event()
    stop = [0.0]

    binding = SQLiteBinding(SQLiteOptions(path=path))
    binding.use_schema(BGDatabaseConfig(attrcount=ATTRS))

    def bare(t: int) -> None:
        conn = open_database(SQLiteOptions(path=path), "synchronous=NORMAL")  # as the binding
        draw = draws.drawer(t)
        go.wait()
        done = 0
        while time.monotonic() < stop[0]:
            a = draws.claim(draw)
            m = draw()
            conn.execute(profile, (m,)).fetchone()
            conn.execute(friends, (m,)).fetchone()
            conn.execute(resources, (m,)).fetchone()
            if a == m:
                conn.execute(SQLITE_PENDING, (m,)).fetchone()
            draws.release(a)
            done += 1
        counts[t] = done
        conn.close()

    def through_binding(t: int) -> None:
        conn = binding.connect()
        draw = draws.drawer(t)
        go.wait()
        done = 0
        while time.monotonic() < stop[0]:
            a = draws.claim(draw)
            conn.view_profile(a, draw())
            draws.release(a)
            done += 1
        counts[t] = done
        conn.close()

    def uniform(t: int) -> None:  # the bare loop as it drew before: members uniformly
        conn = open_database(SQLiteOptions(path=path), "synchronous=NORMAL")
        rng = random.Random(t)
        go.wait()
        done = 0
        while time.monotonic() < stop[0]:
            m = rng.randrange(users)
            conn.execute(profile, (m,)).fetchone()
            conn.execute(friends, (m,)).fetchone()
            conn.execute(resources, (m,)).fetchone()
            done += 1
        counts[t] = done
        conn.close()

    one = {"bare": bare, "uniform": uniform, "binding": through_binding}[kind]

    workers = [threading.Thread(target=one, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    c0, t0 = cpu_s(), time.monotonic()
    stop[0] = t0 + duration
    go.set()
    for w in workers:
        w.join()
    cpu, elapsed = cpu_s() - c0, time.monotonic() - t0
    done = sum(counts)
    return {"rate": done / elapsed, "us": cpu / done * 1e6}


def pythons(baseline: str | None) -> list[tuple[str, str]]:
    """("", this checkout's interpreter) and (" before", the baseline's)."""
    out = [("", sys.executable)]
    if baseline:
        out.append((" before", str(Path(baseline).resolve() / ".venv/bin/python")))
    return out


def loop_run(python: str, driver: str, kind: str, target: str, t: int, args) -> dict:  # type: ignore[no-untyped-def]
    """One loop in a process of its own (as bgbench's load process is): `python` is a
    checkout's interpreter, whose bgbench the binding loop uses."""
    proc = subprocess.run(
        [python, __file__, "loop", driver, kind, target, str(t), str(args.duration),
         str(args.users)],
        capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def rounds_of(name: str, ts: tuple[int, ...], rounds: int, one_round) -> None:  # type: ignore[no-untyped-def]
    """Run `one_round(t)` -> {client: {rate, us}} `rounds` times per T; print each round and
    the medians (throughput ratio against the bare loop of the same round)."""
    print(f"{'':>6} {'client':>22} {'T':>4} {'actions/s':>10} {'us CPU/act':>10} {'x bare':>7}")
    for t in ts:
        seen: dict[str, list[tuple[float, float, float]]] = {}
        for k in range(rounds):
            got = one_round(t)
            bare = got["bare " + name]["rate"]
            for client, r in got.items():
                ratio = r["rate"] / bare
                seen.setdefault(client, []).append((r["rate"], r["us"], ratio))
                print(
                    f"{'r' + str(k + 1):>6} {client:>22} {t:>4} {r['rate']:>10,.0f} "
                    f"{r['us']:>10.1f} {ratio:>7.3f}",
                    flush=True,
                )
        for client, rows in seen.items():
            rate, us, ratio = (statistics.median(col) for col in zip(*rows, strict=True))
            print(
                f"{'median':>6} {client:>22} {t:>4} {rate:>10,.0f} {us:>10.1f} {ratio:>7.3f}",
                flush=True,
            )


def postgres(server: dict, args: argparse.Namespace) -> None:
    dsn = new_database(server)
    print(f"PostgreSQL View Profile, {args.users:,} members, {args.duration:g} s per row")

    def one_round(t: int) -> dict:
        got = {}
        for tag, python in pythons(args.baseline):
            option = f"store.options.dsn={dsn}"
            got["bgbench" + tag] = bgbench_run(python, "postgres", option, t, args.duration,
                                               args.users)  # fmt: skip
            got["binding alone" + tag] = loop_run(python, "asyncpg", "binding", dsn, t, args)
        got["bare asyncpg"] = loop_run(sys.executable, "asyncpg", "bare", dsn, t, args)
        return got

    rounds_of("asyncpg", PG_T, args.rounds, one_round)


def sqlite(args: argparse.Namespace) -> None:
    print(f"SQLite View Profile, {args.users:,} members, {args.duration:g} s per row")
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/bg.sqlite"

        def one_round(t: int) -> dict:
            got = {}
            for tag, python in pythons(args.baseline):
                option = f"store.options.path={path}"
                got["bgbench" + tag] = bgbench_run(python, "sqlite", option, t, args.duration,
                                                   args.users)  # fmt: skip
                got["binding alone" + tag] = loop_run(python, "sqlite3", "binding", path, t, args)
            got["bare sqlite3"] = loop_run(sys.executable, "sqlite3", "bare", path, t, args)
            got["bare, uniform draws"] = loop_run(
                sys.executable, "sqlite3", "uniform", path, t, args
            )
            return got

        rounds_of("sqlite3", SQLITE_T, args.rounds, one_round)


def loop_main(argv: list[str]) -> None:
    """`loop DRIVER KIND TARGET T DURATION USERS`: one loop, its figures as JSON."""
    driver, kind, target, t, duration, users = argv
    if driver == "asyncpg":
        import uvloop

        got = uvloop.run(asyncpg_loop(target, int(t), float(duration), int(users), kind))
    else:
        got = sqlite_loop(target, int(t), float(duration), int(users), kind)
    print(json.dumps(got))


def main() -> None:
    if sys.argv[1:2] == ["loop"]:
        loop_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["postgres", "sqlite", "all"])
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", help="a checkout of bgbench (with its .venv) to compare")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    if args.what in ("sqlite", "all"):
        sqlite(args)
    if args.what in ("postgres", "all"):
        with tempfile.TemporaryDirectory() as tmp:
            server = servers.start("postgres", Path(tmp) / "pg")
            try:
                postgres(server, args)
            finally:
                servers.stop(Path(tmp) / "pg")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
