"""The engine's share of an asynchronous store's action, one row (run by engine.py suspending).

A null store whose View Profile suspends once (`await asyncio.sleep(0)`, as a driver
awaiting its socket does), View Profile only, T tasks on one uvloop loop, in this process:

    python benchmarks/engine_suspending.py engine 256 5   # bgbench's engine (FragmentEngine)
    python benchmarks/engine_suspending.py bare 256 5     # a bare loop of the same calls

Prints one JSON line: actions/s and client CPU µs per action (the run's own CPU: the
engine's as its run result counts it, the bare loop's between its start and end). Run
with another checkout's interpreter, `engine` measures that checkout's engine.
"""

import asyncio
import json
import random
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import uvloop

from bgbench.worker.engine import FragmentEngine, RunSpec
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import FragmentPlan
from bgbench.workloads.bg.store import Profile
from bgbench.workloads.bg.stores.null import NullAsyncConnection, NullBinding, NullOptions
from bgbench.workloads.bg.workload import WORKLOAD

USERS = 10_000


class Suspending(NullAsyncConnection):
    async def view_profile(self, requester: int, member: int) -> Profile:
        await asyncio.sleep(0)
        s = self.s
        return Profile(member, [], s.friends[member], s.resources[member], None, None)


class SuspendingNull(NullBinding):
    suspends = True

    async def connect_async(self) -> Suspending:  # type: ignore[override]
        return Suspending(self)


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def engine(tasks: int, duration: float) -> tuple[float, float]:
    config = BGConfig.model_validate(
        {"database": {"usercount": USERS}, "workload": {"mix": {"VP": 1}}}
    )
    binding = SuspendingNull(NullOptions())
    capacities = FragmentPlan((1.0,), 0.27).capacities
    eng = FragmentEngine(WORKLOAD, config, "null", {}, capacities, 0, binding=binding)
    eng.prepare()
    with tempfile.TemporaryDirectory() as tmp:
        spec = RunSpec("s", tasks, duration, 0, 7, Path(tmp) / "s")
        r = eng.run(spec, threading.Event(), lambda *_: None)
    eng.close()
    return r.actions / r.elapsed, r.cpu_seconds / r.actions * 1e6


async def bare(tasks: int, duration: float) -> tuple[float, float]:
    binding = SuspendingNull(NullOptions())
    binding.friends = dict.fromkeys(range(USERS), 3)
    binding.resources = dict.fromkeys(range(USERS), 3)
    conns = [await binding.connect_async() for _ in range(tasks)]
    done = 0
    stop = time.monotonic() + duration

    async def one(conn: Suspending, seed: int) -> None:
        nonlocal done
        draw = random.Random(seed).randrange
        while time.monotonic() < stop:
            await conn.view_profile(1, draw(USERS))
            done += 1

    c0, t0 = cpu_s(), time.monotonic()
    await asyncio.gather(*(one(c, i) for i, c in enumerate(conns)))
    return done / (time.monotonic() - t0), (cpu_s() - c0) / done * 1e6


def main() -> None:
    what, tasks, duration = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    if what == "engine":
        rate, us = engine(tasks, duration)
    else:
        rate, us = uvloop.run(bare(tasks, duration))
    print(json.dumps({"actions_per_s": rate, "us_per_action": us}))


if __name__ == "__main__":
    main()
