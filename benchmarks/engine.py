"""The load engine measured against itself and against bare driver loops, side by side.

    .venv/bin/python benchmarks/engine.py null          # null store, T = 1 ... 4096
    .venv/bin/python benchmarks/engine.py null --threads 1 1024 --engines tasks \
        --locust /path/to/venv/bin/locust --base ../main  # with Locust and main's code
    .venv/bin/python benchmarks/engine.py postgres      # View Profile: bgbench vs bare loops
    .venv/bin/python benchmarks/engine.py suspending --base ../main  # an async store's share
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
- suspending: the engine's share of an asynchronous store's action: a null store whose
  View Profile suspends once (asyncio.sleep(0)), in process, under the engine (this
  checkout's and `--base`'s) and in a bare loop of the same calls, T = 16 and 256,
  alternating for `--rounds` (benchmarks/engine_suspending.py runs each row).
- sweep: the `low` mix at T = 2 ... 1024 on SQLite and PostgreSQL, 2 local agents with
  the layout chosen for each T (coordinator/execution/sizing.py): throughput, client CPU per
  action, p95 response time, load processes.

PostgreSQL is started on loopback by deploy/local/servers.py in a temporary directory
and stopped at the end.
"""

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
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


LOCUSTFILE = """
import json, os, resource, time
from locust import User, constant, events, task

window = {}

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

@events.test_start.add_listener
def started(environment, **_kw):
    window["cpu"], window["t"] = cpu(), time.monotonic()

@events.test_stop.add_listener
def stopped(environment, **_kw):
    out = {"requests": environment.stats.total.num_requests, "cpu_s": cpu() - window["cpu"],
           "elapsed_s": time.monotonic() - window["t"]}
    with open(os.environ["NOOP_OUT"], "w") as f:
        json.dump(out, f)

class NoOp(User):
    wait_time = constant(0)

    @task
    def noop(self):
        t0 = time.perf_counter()
        self.environment.events.request.fire(
            request_type="noop", name="noop", response_time=(time.perf_counter() - t0) * 1000,
            response_length=0, exception=None, context={})
"""


def locust_noop(locust: str, duration: float, users: int = 50) -> tuple[float, float]:
    """Locust's no-op request: (requests/s, µs of CPU per request) over its test window."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "noop.py").write_text(LOCUSTFILE, encoding="utf-8")
        out = Path(tmp) / "out.json"
        subprocess.run(
            [locust, "-f", "noop.py", "--headless", "-u", str(users), "-r", str(users),
             "-t", f"{duration:g}s", "--only-summary", "--skip-log"],
            cwd=tmp, env={**os.environ, "NOOP_OUT": str(out)}, capture_output=True, check=True,
        )  # fmt: skip
        w = json.loads(out.read_text(encoding="utf-8"))
    return w["requests"] / w["elapsed_s"], 1e6 * w["cpu_s"] / max(1, w["requests"])


def run_in(tree: Path | None, *args: str) -> tuple[dict, float]:
    """`bgbench run ARGS --json` with this checkout, or with `tree`'s own venv."""
    if tree is None:
        return run(*args)
    t0 = time.monotonic()
    proc = subprocess.run(
        [str(tree / ".venv/bin/python"), "-m", "bgbench", "run", *args, "--json"],
        capture_output=True, text=True, cwd=tree,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout), time.monotonic() - t0


def null(
    duration: float,
    threads: tuple[int, ...] = NULL_T,
    engines: tuple[str, ...] = ("tasks", "threads"),
    locust: str | None = None,
    base: Path | None = None,
) -> None:
    print(f"null store, 1 agent x 1 load process, logging on, {duration:g} s runs")
    if locust:
        rate, us = locust_noop(locust, duration)
        print(f"Locust no-op request, 50 users: {rate:,.0f} requests/s, {us:.2f} us CPU/request "
              f"(a third: {us / 3:.2f})", flush=True)  # fmt: skip
    trees: list[tuple[str, Path | None]] = [("this", None)]
    if base is not None:
        trees = [("base", base.resolve()), *trees]
    print(
        f"{'tree':>5} {'engine':>8} {'T':>5} {'actions/s':>10} {'us CPU/act':>10} "
        f"{'read p99 ms':>11} {'write p99 ms':>12} {'elapsed s':>9} {'wall s':>7} "
        f"{'delay p99 ms':>12}"
    )
    for t in threads:
        for engine in engines:
            for label, tree in trees:
                with tempfile.TemporaryDirectory() as tmp:
                    args = ["--store", "null", "--agents", "1", "--processes", "1",
                            "--threads", str(t), "--duration", str(duration),
                            "--users", str(max(10_000, 2 * t)), "--results", tmp]  # fmt: skip
                    if engine == "threads":
                        args += ["-p", "store.options.concurrency=threads"]
                    r, wall = run_in(tree, *args)
                agent = r["agents"][0]
                print(
                    f"{label:>5} {engine:>8} {t:>5} {r['actions_per_s']:>10,.0f} "
                    f"{r['client_cpu_us_per_action']:>10.2f} {p99(r, True):>11.3f} "
                    f"{p99(r, False):>12.3f} {r['elapsed_s']:>9.2f} {wall:>7.1f} "
                    f"{agent['client_delay_p99_ms']:>12.3f}",
                    flush=True,
                )
    if locust:
        rate, us = locust_noop(locust, duration)
        print(f"Locust no-op request, 50 users: {rate:,.0f} requests/s, {us:.2f} us CPU/request "
              f"(a third: {us / 3:.2f})", flush=True)  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f}")


def suspending(duration: float, rounds: int, base: Path | None) -> None:
    """Each row in a process of its own, the trees alternating within each round."""
    script = Path(__file__).resolve().parent / "engine_suspending.py"
    rows: list[tuple[str, Path]] = [("bare loop", Path(".venv/bin/python"))]
    if base is not None:
        rows.append(("engine, base", base.resolve() / ".venv/bin/python"))
    rows.append(("engine, this", Path(".venv/bin/python")))
    print(f"null store suspending once per call, View Profile only, {duration:g} s per row")
    print(f"{'round':>5} {'T':>5} {'client':>13} {'actions/s':>10} {'us CPU/act':>10}")
    for r in range(rounds):
        for t in (16, 256):
            for label, python in rows:
                what = "bare" if label == "bare loop" else "engine"
                proc = subprocess.run(
                    [str(python), str(script), what, str(t), str(duration)],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                out = json.loads(proc.stdout.splitlines()[-1])
                print(f"{r + 1:>5} {t:>5} {label:>13} {out['actions_per_s']:>10,.0f} "
                      f"{out['us_per_action']:>10.2f}", flush=True)  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f}")


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
    parser.add_argument("what", choices=["null", "suspending", "postgres", "sweep", "all"])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--threads", type=int, nargs="+", default=list(NULL_T), help="null: T")
    parser.add_argument("--engines", nargs="+", choices=["tasks", "threads"],
                        default=["tasks", "threads"], help="null: the engines")  # fmt: skip
    parser.add_argument("--locust", help="null: a Locust executable, for its no-op request")
    parser.add_argument("--base", type=Path,
                        help="null, suspending: a checkout to run beside (its .venv)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=2, help="suspending: rounds")
    args = parser.parse_args()
    if args.what == "suspending":
        suspending(args.duration, args.rounds, args.base)
        return
    if args.what in ("null", "all"):
        null(args.duration, tuple(args.threads), tuple(args.engines), args.locust, args.base)
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
