"""The load engine of one fragment: T closed loops acting as socialites.

Each loop picks a socialite (D-Zipfian, exclusive), a unit of the mix (an action or a
session) and plays it through the timed connection, paced by the inter-arrival and
think times, until the duration passes, the operation count is reached, or the store
keeps failing. For a store with an asynchronous driver the loops are tasks on one
event loop (uvloop) per load process, so a waiting socialite costs a few hundred bytes
and no thread switch; for a blocking store they are threads (runner.py has both).
"""

import asyncio
import contextlib
import gc
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bgbench.errors import UserError
from bgbench.protos import START_READIED
from bgbench.validation.checker import InitialValues
from bgbench.validation.initial import load_initial, save_initial
from bgbench.validation.logformat import LogWriter
from bgbench.validation.runner import validate_logs
from bgbench.worker import runner
from bgbench.worker.measurement import (
    client_delay_ns,
    histogram_of,
    session_histogram,
    summarize,
)
from bgbench.worker.runner import RunOutcome
from bgbench.workloads.bg.actions import Action, Item
from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.bg.mixes import resolve_mix
from bgbench.workloads.bg.store import BGBinding, make_binding

SATURATED_CPU_SHARE = 0.9
# An experiment whose actions waited this long (p99) between their intended start and
# their store call measured the client, not the store: it fails as "client overloaded".
CLIENT_DELAY_BOUND_MS = 100.0


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
        self.concurrency: str = getattr(self.binding, "concurrency", "threads")
        self._loop: asyncio.AbstractEventLoop | None = None
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
        self.state = self._new_state()

    def _new_state(self, contents=None) -> FragmentState:
        return FragmentState(
            self.fragment,
            self.config.workload.exclusive,
            contents,
            threaded=self.concurrency != "asyncio",
        )

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """This load process's event loop, for the whole rating (a binding's pools live on it)."""
        if self._loop is None:
            self._loop = runner.new_event_loop()
        return self._loop

    def close(self) -> None:
        """Release the binding: its pools on the event loop first, then the rest."""
        try:
            if self._loop is not None:
                with contextlib.suppress(Exception):
                    aclose = getattr(self.binding, "aclose", None)
                    if aclose is not None:
                        self._loop.run_until_complete(aclose())
                self._loop.close()
                self._loop = None
        finally:
            self.binding.close()

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
        publish: runner.Publish,
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
        assert self.state is not None
        spec.log_dir.mkdir(parents=True, exist_ok=True)
        self._save_initial(initial_path(spec.log_dir, self.fragment.index))
        log = LogWriter(log_path(spec.log_dir, self.fragment.index))
        plan = runner.Plan(
            engine=self,
            spec=spec,
            state=self.state,
            units=self.units,
            cumulative=self.cumulative,
            zipf=self.zipf,
            workload=self.config.workload,
            comment_text=self.fragment.comment_text,
        )
        cpu0 = runner.cpu_seconds()
        # Everything made so far (modules, the fragment, BG's picture) lives through the run:
        # frozen, the collector's full passes stop walking it (they held the loop 20-40 ms).
        gc.collect()
        gc.freeze()
        try:
            if self.concurrency == "asyncio":
                outcome = runner.run_tasks(plan, self.loop, log, stop, publish)
            else:
                outcome = runner.run_threads(plan, log, stop, publish)
        finally:
            gc.unfreeze()
            log.close()
        np.save(spec.log_dir / f"actions-f{self.fragment.index}.npy", outcome.actions)
        summary = self._summary(spec, outcome, log.count)
        summary["cpu_seconds_total"] = runner.cpu_seconds() - cpu0  # connecting, summaries included
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
            self.state = self._new_state(contents)
            return "readback"
        if policy != "carry":
            raise UserError(f"unknown start state {policy!r}: use carry, reload or readback")
        if self.state.uncertain:
            self._load()  # a write of unknown outcome: only a reload makes the picture exact
            return "reload (a write failed in the previous experiment)"
        return "carry"

    def _summary(self, spec: RunSpec, outcome: RunOutcome, records: int) -> dict:
        actions, cpu = outcome.actions, outcome.cpu_seconds
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
        delay = client_delay_ns(actions)
        delay_p99_ms = float(np.percentile(delay, 99)) / 1e6 if len(delay) else 0.0
        aborted = outcome.aborted
        if not aborted and delay_p99_ms > CLIENT_DELAY_BOUND_MS:
            aborted = (
                f"client overloaded: actions waited {delay_p99_ms:.0f} ms (p99) between their "
                f"intended start and their store call, beyond the {CLIENT_DELAY_BOUND_MS:g} ms "
                f"bound, at {spec.threads} {outcome.runner_kind} in one load process: use more "
                "load processes or agents"
            )
        elapsed = outcome.elapsed
        return {
            "fragment": self.fragment.index,
            "threads": spec.threads,
            "elapsed": elapsed,
            "actions": len(actions),
            "sessions": outcome.sessions,
            "errors": int((actions["status"] != 0).sum()),
            "per_action": per_action,
            "error_counts": outcome.error_counts,
            "cpu_seconds": cpu,
            "saturated": elapsed > 0 and cpu / elapsed >= SATURATED_CPU_SHARE,
            "embedded": bool(self.binding.embedded),
            "log_records": records,
            "store_counters": self.binding.counters(),
            "session_hist": session_histogram(actions).encode().decode(),
            "client_delay_hist": histogram_of(delay).encode().decode(),
            "loop_lag_max_ms": outcome.loop_lag_max_ms,
            "concurrency": self.concurrency,
            "state_uncertain": self.state.uncertain,
            "aborted": aborted,
        }

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
