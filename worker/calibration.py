"""How much load an agent can generate: a short calibration on the load engine's own path.

One process times a no-op store call through the generic timer (pick a socialite, time
the call, log one tracked read) for a fixed wall time; the agent's capacity is that rate
times the load processes it can run at once (no more than its cores). The coordinator
sizes D-Zipfian fragments by these capacities, so a host twice as fast gets twice the
popularity mass and threads. No workload is involved: this is the engine's own cost.
"""

import os
import random
import tempfile
import time
from pathlib import Path

from bgbench.sdk import Timer, UnitContext, run_blocking
from bgbench.validation.logformat import LogWriter
from bgbench.worker.measurement import Recorder

CALIBRATION_S = 0.5
SLICE_ACTIONS = 500
MEMBERS = 2000


async def _no_op(member: int) -> int:
    return member


async def _no_think(_seconds: float) -> bool:
    return True


def _seen(member: int) -> tuple[tuple[int, int, int], ...]:
    return ((0, member, 1),)  # one tracked item (kind 0, id member) read with value 1


def single_process_rate(seconds: float = CALIBRATION_S) -> float:
    """Timed no-op reads/s of one load thread, logging included."""
    with tempfile.TemporaryDirectory() as tmp:
        log = LogWriter(Path(tmp) / "calibration.bglog")
        recorder = Recorder(log)
        rng = random.Random(1)
        ctx = UnitContext(Timer(None, recorder, 0), rng, _no_think)
        busy: dict[int, object] = {}
        # The best of short slices: a slice another process interrupted says nothing about
        # this host's speed, so the fastest slice is the steadiest estimate on a busy machine.
        rate, deadline, sid = 0.0, time.perf_counter() + seconds, 0
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            for _ in range(SLICE_ACTIONS):
                m = rng.randrange(MEMBERS)
                claim = object()
                if busy.setdefault(m, claim) is not claim:
                    continue
                sid += 1
                ctx.sid, ctx.intended = sid, time.monotonic_ns()
                read = ctx.read(0, _no_op(m), _seen)
                run_blocking(read)
                busy.pop(m, None)
            rate = max(rate, SLICE_ACTIONS / (time.perf_counter() - t0))
            recorder.maybe_flush()
        recorder.finish()
        log.close()
    return rate


def measure_capacity(load_processes: int) -> float:
    cores = os.cpu_count() or 1
    return single_process_rate() * min(load_processes, cores)
