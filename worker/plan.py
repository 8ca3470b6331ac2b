"""What the socialite runners of one run share: the run's spec, its plan, the open-loop
schedule, the outcome, and the helpers both runners (worker/runner.py) use."""

import asyncio
import math
import random
import resource
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic_ns
from typing import Any, cast

from bgbench.errors import UserError
from bgbench.run_result import ErrorCount, sum_counts
from bgbench.sdk import Fragment, Player, StoreBinding, Think, Timer, UnitContext
from bgbench.worker.measurement import Recorder
from bgbench.worker.tally import ActionTally

MAX_CONSECUTIVE_ERRORS = 100
# ... or nothing but errors for this long: a store whose every call times out (5 s for
# memcached) would take minutes to reach the count above.
MAX_FAILING_NS = 30_000_000_000
# A run that tolerates errors: a socialite whose action failed waits this long before its
# next, so a dead store is not spun on (refused connections fail in microseconds).
ERROR_BACKOFF_S = 0.01
ARRIVALS = ("poisson", "constant")
_ARRIVALS_SEED = 0xA77  # the schedule's own stream beside the socialites' (which use t >= 0)
_GAPS_AT_ONCE = 1024  # exponential gaps drawn per refill
# A task whose store never suspends yields after a slice of work: each yield is a turn of
# the loop (a few µs; response times count from after it). Few tasks take long slices;
# many take shorter ones, so a round of every task (how late the watcher's timers may
# fire) stays within TURN_NS, down to SLICE_NS (each slice as long as before: 50 µs).
SLICE_NS = 50_000
LONGEST_SLICE_NS = 200_000
TURN_NS = 50_000_000
NEVER_NS = 1 << 62  # a time slice that never ends: the task's store suspends on its own

# (actions, errors, sessions, latency histogram delta or None, client lag in ms, timeouts)
Publish = Callable[[int, int, int, bytes | None, float, int], None]


@dataclass(frozen=True)
class RunSpec:
    experiment_id: str
    threads: int
    duration_s: float
    operation_count: int
    seed: int
    log_dir: Path
    start_state: str = "carry"  # carry | reload | readback
    target_rate: float = 0.0  # open loop: this load process's arrivals/s; 0: closed loop
    arrivals: str = "poisson"  # poisson | constant (open loop only)
    # A scenario's faults: errors never end the run, calls stuck at the end are a note.
    tolerate_errors: bool = False

    def check_pacing(self) -> None:
        """A target rate and arrival process the runners can follow, or a UserError."""
        if not (math.isfinite(self.target_rate) and self.target_rate >= 0):
            raise UserError(
                f"target_rate: {self.target_rate!r} is not a finite rate >= 0 (actions/s; "
                "0 or none for a closed loop)"
            )
        if self.arrivals not in ARRIVALS:
            raise UserError(f"arrivals: {self.arrivals!r} is not one of {', '.join(ARRIVALS)}")


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


@dataclass
class Plan:
    """What every socialite loop of one run shares."""

    fragment: Fragment
    binding: StoreBinding
    spec: RunSpec
    units: list[str]
    cumulative: list[float]
    action_names: Mapping[int, str]
    interarrival_ms: float
    tally: ActionTally  # where every runner's action timings go

    @property
    def per_runner_ops(self) -> int:
        s = self.spec
        return -(-s.operation_count // s.threads) if s.operation_count and s.threads else 0

    def seed(self, t: int) -> list[int]:
        s = self.spec
        return [s.seed, self.fragment.index, t, zlib.crc32(s.experiment_id.encode())]

    def player(
        self, conn: Any, rec: Recorder, t: int, think: Think
    ) -> tuple[Player, UnitContext[Any]]:
        """Runner t's player and the unit context it plays every unit with (one, reused)."""
        player = self.fragment.player(conn, rec, t, self.seed(t), self.units)
        return player, UnitContext(player.timer, player.rng, think, t)

    def arrivals(self) -> "Arrivals | None":
        """The open-loop schedule its socialites share; None for a closed loop."""
        s = self.spec
        if s.target_rate <= 0:
            return None
        seed = [s.seed, self.fragment.index, _ARRIVALS_SEED, zlib.crc32(s.experiment_id.encode())]
        return Arrivals(s.target_rate, s.arrivals, seed)


class Arrivals:
    """One load process's open-loop schedule: `rate` arrivals a second from the first
    take, Poisson (exponential gaps) or constant, reproducible from `seed`. `take` is for
    one event loop; threads share the schedule through `take_locked`."""

    def __init__(self, rate: float, kind: str, seed: list[int]) -> None:
        self.gap_ns = 1e9 / rate
        self.poisson = kind != "constant"
        self.rng = random.Random(repr(seed))  # a str seed is hashed (sha512): reproducible
        self.next = 0.0  # the next arrival, monotonic ns; 0 before the first take
        self.gaps: list[float] = []
        self.lock = threading.Lock()

    def take(self) -> int:
        """The next arrival (monotonic ns), which may be past: a queue the store made."""
        at = self.next
        if not at:
            at = float(monotonic_ns())
        if self.poisson:
            if not self.gaps:
                expo, mean = self.rng.expovariate, self.gap_ns
                self.gaps = [expo(1.0) * mean for _ in range(_GAPS_AT_ONCE)]
            self.next = at + self.gaps.pop()
        else:
            self.next = at + self.gap_ns
        return int(at)

    def take_locked(self) -> int:
        with self.lock:
            return self.take()


@dataclass
class RunOutcome:
    elapsed: float
    sessions: int
    error_counts: list[ErrorCount]
    aborted: str
    runner_kind: str  # "tasks" or "threads", for messages
    loop_lag_max_ms: float = 0.0
    cpu_seconds: float = 0.0  # the load process's CPU from the start to the end of the run
    unit_counts: list[int] = field(default_factory=list)  # per unit of the mix, played
    note: str = ""  # what a run that tolerates errors went through instead of aborting
    # per action code, the tallies its units added (Recorder.tally), all runners together
    action_counts: dict[int, dict[str, int]] = field(default_factory=dict)


@dataclass
class Flags:
    stop: bool = False
    aborted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def error_counts(recorders: list[Recorder], names: Mapping[int, str]) -> list[ErrorCount]:
    errors: dict[tuple[int, str], int] = {}
    samples: dict[tuple[int, str], str] = {}
    for r in recorders:
        for key, n in r.errors.items():
            errors[key] = errors.get(key, 0) + n
            samples.setdefault(key, r.error_samples[key])
    return [
        ErrorCount(names.get(a, str(a)), t, n, samples[(a, t)])
        for (a, t), n in sorted(errors.items())
    ]


def action_counts(recorders: list[Recorder]) -> dict[int, dict[str, int]]:
    """Per action code, its runners' tallies added up (empty when no unit tallied)."""
    codes = dict.fromkeys(code for r in recorders for code in r.counts)
    return {
        code: sum_counts([r.counts[code] for r in recorders if code in r.counts]) for code in codes
    }


def finish(recorders: list[Recorder]) -> None:
    for r in recorders:
        r.finish()


def gave_up(timed: Timer[Any]) -> bool:
    """Whether a runner's store is failing: too many errors in a row, or for too long
    (`failing_since` is left as it was by a success: the hot path does not touch it)."""
    errors = timed.consecutive_errors
    return errors >= MAX_CONSECUTIVE_ERRORS or (
        errors > 0 and monotonic_ns() - timed.failing_since >= MAX_FAILING_NS
    )


def failing(timed: Timer[Any], who: str) -> str:
    rec = cast(Recorder, timed.rec)  # the engine's, behind the SDK's interface
    key = next(reversed(rec.error_samples))
    seconds = (monotonic_ns() - timed.failing_since) / 1e9
    return (
        f"store failing: {timed.consecutive_errors} errors in a row over {seconds:.1f} s on "
        f"{who}, last {key[1]}: {rec.error_samples[key]}"
    )


def sleep_until(stop: threading.Event, due: int) -> bool:
    """Sleep until monotonic ns `due` (never less: an event's wait may end a hair early);
    False when the experiment is stopping."""
    while (left := due - monotonic_ns()) > 0:
        if stop.wait(left / 1e9):
            return False
    return not stop.is_set()


def not_stopping(
    alive: list[Timer[Any] | None], stopped_at: int, threads: int, grace_s: float
) -> tuple[bool, str]:
    """Why threads outlived the grace (and whether the store is why). Most of them inside
    store calls begun before the stop: the store stopped answering. Otherwise they are
    runnable but never got to run (the GIL shared by too many threads): the client is
    overloaded, not the store."""
    waiting = sum(1 for tc in alive if tc is not None and 0 < tc.in_call <= stopped_at)
    if 2 * waiting >= len(alive):
        return True, (
            f"{waiting} threads still inside store calls {grace_s:.0f} s after the end: "
            "the store stopped answering"
        )
    return False, (
        f"client overloaded: {len(alive)} of {threads} threads could not stop within the "
        f"{grace_s:g} s grace ({waiting} inside store calls): T is beyond what this load "
        "process can run; use more load processes or agents"
    )


def slice_for(tasks: int, suspends: bool) -> int:
    """How long (ns) each of `tasks` runs before yielding: NEVER_NS when the store suspends
    on its own."""
    if suspends:
        return NEVER_NS
    return max(SLICE_NS, min(LONGEST_SLICE_NS, TURN_NS // max(1, tasks)))
