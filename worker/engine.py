"""The load engine of one fragment: a closed loop of threads acting as socialites.

Each thread picks a socialite (D-Zipfian, exclusive), a unit of the mix (an
action or a session) and plays it through the timed connection, paced by the
inter-arrival and think times, until the duration passes, the operation count is
reached, or the store keeps failing.
"""

import bisect
import json
import random
import resource
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bgbench.errors import UserError
from bgbench.protos import START_READIED
from bgbench.validation.checker import InitialValues
from bgbench.validation.initial import load_initial, save_initial
from bgbench.validation.logformat import LogWriter
from bgbench.validation.runner import validate_logs
from bgbench.worker.measurement import (
    ACTION_DTYPE,
    LiveLatencies,
    ThreadRecorder,
    histogram_of,
    session_histogram,
    summarize,
)
from bgbench.workloads.bg.actions import Action, Item
from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.bg.mixes import resolve_mix
from bgbench.workloads.bg.sessions import Actor
from bgbench.workloads.bg.store import BGBinding, make_binding
from bgbench.workloads.bg.timed import TimedConnection

MAX_CONSECUTIVE_ERRORS = 100
SATURATED_CPU_SHARE = 0.9
DRAW_BATCH = 1024
STOP_GRACE_S = 30.0
PUBLISH_EVERY_S = 0.2
LIVE_EVERY_S = 1.0


@dataclass(frozen=True)
class RunSpec:
    experiment_id: str
    threads: int
    duration_s: float
    operation_count: int
    seed: int
    log_dir: Path
    start_state: str = "carry"  # carry | reload | readback


def log_path(log_dir: Path, fragment: int) -> Path:
    return log_dir / f"log-f{fragment}.bglog"


def initial_path(log_dir: Path, fragment: int) -> Path:
    return log_dir / f"initial-f{fragment}.npz"


class FragmentEngine:
    def __init__(
        self,
        config: BGConfig,
        store: str,
        store_options: dict,
        plan: FragmentPlan,
        index: int,
        binding: BGBinding | None = None,
    ) -> None:
        self.config = config
        self.fragment = Fragment(config.database, plan, index)
        self.binding = binding if binding is not None else make_binding(store, store_options)
        self.state: FragmentState | None = None
        self._readied: str | None = None  # how the state was made exact by ready()
        self.zipf = self.fragment.local_zipf()  # shared by threads: draws are per-thread rngs
        self.mix = resolve_mix(config.workload.mix)
        self.units = list(self.mix)
        self.cumulative = list(np.cumsum([self.mix[u] for u in self.units]))
        self.cumulative[-1] = 1.0

    def prepare(self, create_schema: bool = True) -> dict:
        """Load the fragment. With `create_schema` the schema is created first; without,
        it must exist already (the coordinator has one process create it before any load:
        DDL beside another process's load deadlocks or fails)."""
        t0 = time.perf_counter()
        if create_schema:
            self.binding.create_schema(self.config.database)
        else:
            self.binding.use_schema(self.config.database)
        self._load()
        return {
            "fragment": self.fragment.index,
            "members": self.fragment.size,
            "load_seconds": time.perf_counter() - t0,
            "store": self.binding.describe(),
        }

    def _load(self) -> None:
        """(Re)load the fragment into the schema this binding already uses: no DDL, so every
        load process may do it at once."""
        self.binding.load_fragment(self.fragment)
        self.state = FragmentState(self.fragment, self.config.workload.exclusive)

    def _save_initial(self, path: Path) -> None:
        assert self.state is not None
        rids, comments = self.state.comment_counts()
        members = self.fragment.members
        save_initial(
            path,
            InitialValues(
                {
                    Item.FRIEND_COUNT: (members, self.state.friend_counts()),
                    Item.PENDING_COUNT: (members, self.state.pending_counts()),
                    Item.RESOURCE_COUNT: (members, self.fragment.initial_resource_count),
                    Item.COMMENT_COUNT: (rids, comments),
                }
            ),
        )

    def run(
        self,
        spec: RunSpec,
        stop: threading.Event,
        publish: Callable[[int, int, int, bytes | None], None],
    ):
        if spec.start_state == START_READIED:  # the agent readied every fragment before the run
            if self._readied is None:
                raise UserError("ready must come before a run that starts from it")
            started_from, self._readied = self._readied, None
        else:
            started_from = self._ready_state(spec.start_state)
        if spec.threads > self.fragment.size:
            raise UserError(
                f"{spec.threads} threads on a fragment of {self.fragment.size} members: "
                "raise usercount or lower threadcount"
            )
        spec.log_dir.mkdir(parents=True, exist_ok=True)
        self._save_initial(initial_path(spec.log_dir, self.fragment.index))
        log = LogWriter(log_path(spec.log_dir, self.fragment.index))
        log_lock = threading.Lock()
        recorders = [ThreadRecorder(t, log, log_lock) for t in range(spec.threads)]
        sessions = [0] * spec.threads
        aborted: list[str] = []
        per_thread_ops = (
            -(-spec.operation_count // spec.threads) if spec.operation_count and spec.threads else 0
        )
        # Threads connect, then wait for all to be started: a thread started while thousands
        # of others already run waits its turn for the interpreter behind all of them.
        go = threading.Event()
        threads = [
            threading.Thread(
                target=self._thread_main,
                args=(t, spec, recorders[t], stop, go, sessions, aborted, per_thread_ops),
                name=f"bg-f{self.fragment.index}-t{t}",
                daemon=True,
            )
            for t in range(spec.threads)
        ]
        live = LiveLatencies(recorders)
        try:
            for th in threads:
                th.start()
        except BaseException:
            stop.set()
            raise
        finally:
            go.set()
        cpu0 = _cpu_seconds()
        t0 = time.monotonic()
        next_cut = t0 + LIVE_EVERY_S
        deadline = t0 + spec.duration_s
        stuck_deadline = deadline + STOP_GRACE_S
        stopped_at = 0  # monotonic ns when the stop was first seen
        while True:
            alive = [t for t, th in enumerate(threads) if th.is_alive()]
            now = time.monotonic()
            if not alive:
                break
            if now >= deadline:
                stop.set()
            if not stopped_at and stop.is_set():
                stopped_at = time.monotonic_ns()
            if now >= stuck_deadline:
                aborted.append(
                    _not_stopping([recorders[t] for t in alive], stopped_at, spec.threads)
                )
                break
            threads[alive[0]].join(timeout=min(PUBLISH_EVERY_S, max(0.0, deadline - now) + 0.005))
            delta = None
            if time.monotonic() >= next_cut:
                delta, next_cut = live.cut(), next_cut + LIVE_EVERY_S
            publish(
                sum(r.action_count for r in recorders),
                sum(sum(r.errors.values()) for r in recorders),
                sum(sessions),
                delta,
            )
        publish(
            sum(r.action_count for r in recorders),
            sum(sum(r.errors.values()) for r in recorders),
            sum(sessions),
            live.cut(final=True),
        )
        elapsed = time.monotonic() - t0
        cpu = _cpu_seconds() - cpu0
        chunks = [r.finish() for r in recorders]
        log.close()
        actions = np.concatenate(chunks) if chunks else np.empty(0, dtype=ACTION_DTYPE)
        np.save(spec.log_dir / f"actions-f{self.fragment.index}.npy", actions)
        summary = self._summary(
            spec, actions, recorders, sessions, aborted, elapsed, cpu, log.count
        )
        summary["start_state"] = started_from
        return summary

    def ready(self, policy: str) -> dict:
        """Make the state exact now, for a run that starts from it (start_state START_READIED):
        the agents ready every fragment before any starts, so no reload runs beside load."""
        t0 = time.perf_counter()
        self._readied = self._ready_state(policy)
        return {
            "fragment": self.fragment.index,
            "members": self.fragment.size,
            "load_seconds": time.perf_counter() - t0,
            "start_state": self._readied,
        }

    def _ready_state(self, policy: str) -> str:
        """Make BG's picture of the fragment exact before a run; say how."""
        if self.state is None:
            raise UserError("the fragment is not loaded: prepare before running")
        if policy == "reload":
            self._load()
            return "reload"
        if policy == "readback":
            if not self.binding.can_read_back:
                raise UserError(
                    f"store {self.binding.name} cannot read its state back: "
                    "use rating.state carry or reload"
                )
            contents = self.binding.read_back(self.fragment)
            self.state = FragmentState(self.fragment, self.config.workload.exclusive, contents)
            return "readback"
        if policy != "carry":
            raise UserError(f"unknown start state {policy!r}: use carry, reload or readback")
        if self.state.uncertain:
            self._load()  # a write of unknown outcome: only a reload makes the picture exact
            return "reload (a write failed in the previous experiment)"
        return "carry"

    def _summary(self, spec, actions, recorders, sessions, aborted, elapsed, cpu, records) -> dict:
        errors: dict[tuple[int, str], int] = {}
        samples: dict[tuple[int, str], str] = {}
        for r in recorders:
            for key, n in r.errors.items():
                errors[key] = errors.get(key, 0) + n
                samples.setdefault(key, r.error_samples[key])
        per_action = {
            Action(code).name: {
                "count": s.count,
                "errors": s.errors,
                "response": s.response.encode().decode(),
                "service": s.service.encode().decode(),
            }
            for code, s in summarize(actions).items()
        }
        assert self.state is not None
        return {
            "fragment": self.fragment.index,
            "threads": spec.threads,
            "elapsed": elapsed,
            "actions": len(actions),
            "sessions": sum(sessions),
            "errors": int((actions["status"] != 0).sum()),
            "per_action": per_action,
            "error_counts": [
                {"action": Action(a).name, "type": t, "count": n, "sample": samples[(a, t)]}
                for (a, t), n in sorted(errors.items())
            ],
            "cpu_seconds": cpu,
            "saturated": elapsed > 0 and cpu / elapsed >= SATURATED_CPU_SHARE,
            "embedded": bool(self.binding.embedded),
            "log_records": records,
            "store_counters": self.binding.counters(),
            "session_hist": session_histogram(actions).encode().decode(),
            "state_uncertain": self.state.uncertain,
            "aborted": aborted[0] if aborted else "",
        }

    def _thread_main(
        self,
        t: int,
        spec: RunSpec,
        rec: ThreadRecorder,
        stop: threading.Event,
        go: threading.Event,
        sessions: list[int],
        aborted: list[str],
        max_ops: int,
    ) -> None:
        assert self.state is not None
        seed = [spec.seed, self.fragment.index, t, zlib.crc32(spec.experiment_id.encode())]
        np_rng = np.random.default_rng(seed)
        rng = random.Random(str(seed))
        zipf = self.zipf
        buf: list[int] = []

        def draw() -> int:
            nonlocal buf
            if not buf:
                buf = zipf.draw(np_rng, DRAW_BATCH).tolist()
            return buf.pop()

        rec.in_call = time.monotonic_ns()  # connecting waits on the store too
        try:
            conn = self.binding.connect()
        except Exception as exc:
            aborted.append(f"thread {t} could not connect to the store: {exc}")
            stop.set()
            return
        finally:
            rec.in_call = 0
        wl = self.config.workload
        actor = Actor(
            TimedConnection(conn, rec),
            self.state,
            draw,
            rng,
            stop,
            wl.thinktime,
            wl.topk,
            self.fragment.comment_text,
        )
        gap_ns = int(wl.interarrivaltime * 1_000_000)
        units, cumulative = self.units, self.cumulative
        go.wait()
        next_arrival = time.monotonic_ns()
        sid = t << 40
        try:
            while not stop.is_set():
                if gap_ns:
                    next_arrival += gap_ns
                    delay = (next_arrival - time.monotonic_ns()) / 1e9
                    if delay > 0 and stop.wait(delay):
                        break
                    intended = next_arrival
                else:
                    intended = time.monotonic_ns()
                socialite = self.state.acquire_socialite(draw)
                if socialite is None:
                    continue  # every drawn member is busy: draw again
                unit = units[bisect.bisect_left(cumulative, rng.random())]
                errors_before = rec.consecutive_errors
                actions_before = rec.action_count
                try:
                    actor.play(unit, socialite, sid, intended)
                finally:
                    self.state.release_socialite(socialite)
                sid += 1
                if rec.action_count > actions_before:
                    sessions[t] += 1
                if rec.consecutive_errors == errors_before:
                    rec.consecutive_errors = 0
                elif rec.consecutive_errors >= MAX_CONSECUTIVE_ERRORS:
                    key = next(reversed(rec.error_samples))
                    aborted.append(
                        f"store failing: {MAX_CONSECUTIVE_ERRORS} errors in a row on thread {t}, "
                        f"last {key[1]}: {rec.error_samples[key]}"
                    )
                    stop.set()
                if max_ops and rec.action_count >= max_ops:
                    break
        finally:
            conn.close()

    def validate(self, log_dir: Path) -> dict:
        t0 = time.perf_counter()
        k = self.fragment.index
        path = log_path(log_dir, k)
        initial = load_initial(initial_path(log_dir, k))
        # One core per load process (its agent runs one per fragment); out of core if huge.
        result, info = validate_logs([path], initial, workers=1)
        return {
            "fragment": k,
            "reads": result.reads,
            "unpredictable_reads": result.unpredictable_reads,
            "writes": result.writes,
            "sessions": result.sessions,
            "unpredictable_sessions": result.unpredictable_sessions,
            "log_records": info.records,
            "seconds": time.perf_counter() - t0,
            "by_item": {
                Item(i).name: [n, result.unpredictable_by_item.get(i, 0)]
                for i, n in result.reads_by_item.items()
            },
            "by_action": {
                Action(a).name: [n, result.unpredictable_by_action.get(a, 0)]
                for a, n in result.reads_by_action.items()
            },
            "examples": json.loads(json.dumps(result.examples)),
            "never_valid": result.never_valid,
            "lag_hist": histogram_of((np.asarray(result.lags_ms) * 1_000_000).astype(np.int64))
            .encode()
            .decode(),
        }


def _not_stopping(alive: list[ThreadRecorder], stopped_at: int, threads: int) -> str:
    """Why threads outlived the grace. Most of them inside store calls begun before the stop:
    the store stopped answering. Otherwise they are runnable but never got to run (the GIL
    shared by too many threads): the client is overloaded, not the store."""
    waiting = sum(1 for r in alive if 0 < r.in_call <= stopped_at)
    if 2 * waiting >= len(alive):
        return (
            f"{waiting} threads still inside store calls {STOP_GRACE_S:.0f} s after the end: "
            "the store stopped answering"
        )
    return (
        f"client overloaded: {len(alive)} of {threads} threads could not stop within the "
        f"{STOP_GRACE_S:g} s grace ({waiting} inside store calls): T is beyond what this load "
        "process can run; use more load processes or agents"
    )


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
