"""How much load an agent can generate: a short calibration on the load engine's own path.

One process times the null store through the timed connection (draw a socialite, act,
log) for a fixed wall time; the agent's capacity is that rate times the load processes it
can run at once (no more than its cores). The coordinator sizes D-Zipfian fragments by
these capacities, so a host twice as fast gets twice the popularity mass and threads.
"""

import os
import random
import tempfile
import time
from pathlib import Path

from bgbench.validation.logformat import LogWriter
from bgbench.worker.measurement import Recorder
from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.bg.sessions import Actor, unit_vp
from bgbench.workloads.bg.store import Blocking, run_blocking
from bgbench.workloads.bg.stores.null import NullBinding, NullOptions
from bgbench.workloads.bg.timed import TimedConnection

CALIBRATION_S = 0.5
SLICE_ACTIONS = 500


def single_process_rate(seconds: float = CALIBRATION_S) -> float:
    """View Profile actions/s of one load thread on the null store, logging included."""
    fragment = Fragment(BGDatabaseConfig(usercount=2000), FragmentPlan((1.0,), 0.27), 0)
    binding = NullBinding(NullOptions())
    binding.load_fragment(fragment)
    state = FragmentState(fragment)
    tmp = tempfile.TemporaryDirectory()
    log = LogWriter(Path(tmp.name) / "calibration.bglog")
    recorder = Recorder(log)
    rng = random.Random(1)
    members = fragment.members.tolist()

    async def no_think(_seconds: float) -> bool:
        return True

    actor = Actor(
        TimedConnection(Blocking(binding.connect()), recorder, 0), state,
        lambda: rng.choice(members), rng, no_think, 0, 5, fragment.comment_text,
    )  # fmt: skip
    # The best of short slices: a slice another process interrupted says nothing about
    # this host's speed, so the fastest slice is the steadiest estimate on a busy machine.
    rate, deadline = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        for _ in range(SLICE_ACTIONS):
            m = state.acquire_socialite(lambda: rng.choice(members))
            if m is None:
                continue
            run_blocking(unit_vp(actor, m))
            state.release_socialite(m)
        rate = max(rate, SLICE_ACTIONS / (time.perf_counter() - t0))
        recorder.maybe_flush()
    recorder.finish()
    log.close()
    tmp.cleanup()
    return rate


def measure_capacity(load_processes: int) -> float:
    cores = os.cpu_count() or 1
    return single_process_rate() * min(load_processes, cores)
