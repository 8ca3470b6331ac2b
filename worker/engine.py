"""The load engine of one fragment: T loops acting as socialites.

Each loop asks the workload's player for a socialite, picks a unit of the mix (an action
or a session) and plays it, until the duration passes,
the operation count is reached, or the store keeps failing. Closed loop, a loop starts
its next unit when the last ends (after the inter-arrival time, if any); open loop (a
target rate), the loops take arrivals from one schedule (runner.py). For a store with an
asynchronous driver the loops are tasks on one event loop (uvloop) per load process, so
a waiting socialite costs a few hundred bytes and no thread switch; for a blocking store
they are threads (runner.py has both). The engine knows no workload: it drives one
through the Protocols of bgbench.sdk.
"""

import asyncio
import contextlib
import gc
import json
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from bgbench.errors import UserError
from bgbench.protos import START_READIED
from bgbench.run_result import ActionStats, RunResult
from bgbench.sdk import AnyWorkload, Fragment, Progress, StoreBinding
from bgbench.validation.initial import load_initial, save_initial
from bgbench.validation.logformat import LogWriter
from bgbench.validation.logset import WORKLOAD_FILE
from bgbench.validation.phases import PhaseClock, PhaseCounts
from bgbench.validation.runner import validate_logs
from bgbench.validation.visibility import Visibility
from bgbench.worker import runner
from bgbench.worker.contracts import (
    PhaseReadCounts,
    PrepareResult,
    ReadCounts,
    ReadyResult,
    ValidateSummary,
    WriteVisibilityCounts,
)
from bgbench.worker.measurement import histogram_of, is_timeout, visibility_histogram
from bgbench.worker.plan import Plan, Publish, RunOutcome, cpu_seconds
from bgbench.worker.plan import RunSpec as RunSpec
from bgbench.worker.tally import ENDED_INTERVAL_S, ActionFile, ActionTally
from bgbench.workloads import registry

SATURATED_CPU_SHARE = 0.9
# An experiment whose actions waited this long (p99) between their intended start and
# their store call measured the client, not the store: it fails as "client overloaded".
CLIENT_DELAY_BOUND_MS = 100.0


def log_path(log_dir: Path, fragment: int) -> Path:
    return log_dir / f"log-f{fragment}.bglog"


def initial_path(log_dir: Path, fragment: int) -> Path:
    return log_dir / f"initial-f{fragment}.npz"


def _no_progress() -> None:
    pass


class FragmentEngine:
    def __init__(
        self,
        workload: AnyWorkload,
        config: BaseModel,
        store: str,
        store_options: dict[str, Any],
        capacities: Sequence[float],
        index: int,
        binding: StoreBinding | None = None,
    ) -> None:
        self.workload = workload
        self.config = config
        self.binding = (
            binding
            if binding is not None
            else registry.make_binding(workload.name, store, store_options)
        )
        self.concurrency: str = getattr(self.binding, "concurrency", "threads")
        self.fragment: Fragment = workload.fragment(config, capacities, index, self.binding)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loaded = False
        self._readied: str | None = None  # how the state was made exact by ready()
        self.mix = workload.mix(config)
        self.units = list(self.mix)
        self.cumulative = list(np.cumsum([self.mix[u] for u in self.units]))
        self.cumulative[-1] = 1.0
        self.progress: Progress = _no_progress

    def prepare(self, create_schema: bool = True) -> PrepareResult:
        """Load the fragment. With `create_schema` the schema is created first; without,
        it must exist already (the coordinator has one process create it before any load:
        DDL beside another process's load deadlocks or fails)."""
        t0 = time.perf_counter()
        phases = self.fragment.load(create_schema, self.progress)
        self._loaded = True
        return PrepareResult(
            fragment=self.fragment.index,
            size=self.fragment.size,
            load_seconds=time.perf_counter() - t0,
            phases=phases,
            store=self.binding.describe(),
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
                    self._loop.run_until_complete(self.binding.aclose())
                self._loop.close()
                self._loop = None
        finally:
            self.binding.close()

    def run(self, spec: RunSpec, stop: threading.Event, publish: Publish) -> RunResult:
        spec.check_pacing()
        interarrival_ms = self.workload.interarrival_ms(self.config)
        if spec.target_rate and interarrival_ms:
            raise UserError(
                f"{self.workload.name} interarrivaltime ({interarrival_ms:g} ms) and a target "
                "rate pace the load two ways: set interarrivaltime to 0 or drop the target rate"
            )
        if spec.start_state == START_READIED:  # the agent readied every fragment before the run
            if self._readied is None:
                raise UserError("ready must come before a run that starts from it")
            started_from, self._readied = self._readied, None
        else:
            started_from = self._ready_state(spec.start_state)
        size = self.fragment.size
        if spec.threads > size:
            raise UserError(
                f"{spec.threads} threads on a fragment of {size} (one socialite each): raise "
                f"{self.workload.name}.{self.workload.scale_parameter} or lower threadcount"
            )
        spec.log_dir.mkdir(parents=True, exist_ok=True)
        (spec.log_dir / WORKLOAD_FILE).write_text(self.workload.name + "\n", encoding="utf-8")
        save_initial(
            initial_path(spec.log_dir, self.fragment.index), self.fragment.initial_values()
        )
        log = LogWriter(log_path(spec.log_dir, self.fragment.index))
        # Every action to disk in batches, folded into bounded aggregates on the way.
        spill = ActionFile(spec.log_dir / f"actions-f{self.fragment.index}.npy")
        tally = ActionTally(open_loop=spec.target_rate > 0, spill=spill)
        plan = Plan(
            fragment=self.fragment,
            binding=self.binding,
            spec=spec,
            units=self.units,
            cumulative=self.cumulative,
            action_names=self.workload.actions,
            interarrival_ms=interarrival_ms,
            tally=tally,
        )
        cpu0 = cpu_seconds()
        # Everything made so far (modules, the fragment, the workload's picture) lives
        # through the run: frozen, the collector's full passes stop walking it (they held
        # the loop 20-40 ms).
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
            spill.close()
        tally.finish()
        cpu_total = cpu_seconds() - cpu0
        return self._summary(spec, outcome, tally, log.count, cpu_total, started_from)

    def ready(self, policy: str) -> ReadyResult:
        """Make the state exact now, for a run that starts from it (start_state START_READIED):
        the agents ready every fragment before any starts, so no reload runs beside load."""
        t0 = time.perf_counter()
        self._readied = self._ready_state(policy)
        return ReadyResult(
            fragment=self.fragment.index,
            size=self.fragment.size,
            load_seconds=time.perf_counter() - t0,
            start_state=self._readied,
        )

    def _ready_state(self, policy: str) -> str:
        """Make the workload's picture of the fragment exact before a run; say how."""
        if not self._loaded:
            raise UserError("the fragment is not loaded: prepare before running")
        return self.fragment.ready(policy, self.progress)

    def _summary(
        self,
        spec: RunSpec,
        outcome: RunOutcome,
        tally: ActionTally,
        records: int,
        cpu_total: float,
        started: str,
    ) -> RunResult:
        cpu = outcome.cpu_seconds
        names = self.workload.actions
        counts = outcome.action_counts
        per_action = {
            names.get(code, str(code)): ActionStats(
                count=s.count,
                errors=s.errors,
                response_hist=s.response.encode(),
                service_hist=s.service.encode(),
                counts=counts.get(code, {}),
            )
            for code, s in tally.summaries().items()
        }
        delay = tally.delay.histogram()
        delay_p99_ms = delay.get_value_at_percentile(99) / 1000 if tally.count else 0.0
        aborted = outcome.aborted
        if not aborted and delay_p99_ms > CLIENT_DELAY_BOUND_MS:
            aborted = (
                f"client overloaded: actions waited {delay_p99_ms:.0f} ms (p99) between their "
                f"intended start and their store call, beyond the {CLIENT_DELAY_BOUND_MS:g} ms "
                f"bound, at {spec.threads} {outcome.runner_kind} in one load process: use more "
                "load processes or agents"
            )
        elapsed = outcome.elapsed
        return RunResult(
            fragment=self.fragment.index,
            threads=spec.threads,
            elapsed=elapsed,
            actions=tally.count,
            sessions=outcome.sessions,
            errors=tally.errors,
            timeouts=sum(e.count for e in outcome.error_counts if is_timeout(e.type)),
            per_action=per_action,
            per_unit={
                u: n
                for u, n in zip(
                    self.units, outcome.unit_counts or [0] * len(self.units), strict=True
                )
                if n
            },
            error_counts=outcome.error_counts,
            cpu_seconds=cpu,
            cpu_seconds_total=cpu_total,
            saturated=elapsed > 0 and cpu / elapsed >= SATURATED_CPU_SHARE,
            embedded=bool(self.binding.embedded),
            log_records=records,
            store_counters=self.binding.counters(),
            session_hist=tally.sessions.histogram().encode(),
            client_delay_hist=delay.encode(),
            loop_lag_max_ms=outcome.loop_lag_max_ms,
            concurrency=self.concurrency,
            state_uncertain=self.fragment.uncertain,
            aborted=aborted,
            note=outcome.note,
            start_state=started,
            workload_payload=self.fragment.summary_payload(),
            ended_per_interval=tally.ended.tolist(),
            ended_interval_s=ENDED_INTERVAL_S,
        )

    def validate(self, log_dir: Path, clock: PhaseClock | None = None) -> ValidateSummary:
        """The fragment's log checked; with `clock`, per phase and time bin of the run too."""
        t0 = time.perf_counter()
        k = self.fragment.index
        path = log_path(log_dir, k)
        initial = load_initial(initial_path(log_dir, k))
        # One core per load process (its agent runs one per fragment); out of core if huge.
        result, info = validate_logs([path], initial, workers=1, clock=clock)
        phases = result.phases
        if clock is not None and phases is None:
            phases = PhaseCounts.empty(clock.phases)
        items, actions = self.workload.items, self.workload.actions
        return ValidateSummary(
            fragment=k,
            reads=result.reads,
            unpredictable_reads=result.unpredictable_reads,
            writes=result.writes,
            sessions=result.sessions,
            unpredictable_sessions=result.unpredictable_sessions,
            log_records=info.records,
            seconds=time.perf_counter() - t0,
            by_item={
                items.get(i, str(i)): ReadCounts(n, result.unpredictable_by_item.get(i, 0))
                for i, n in result.reads_by_item.items()
            },
            by_action={
                actions.get(a, str(a)): ReadCounts(n, result.unpredictable_by_action.get(a, 0))
                for a, n in result.reads_by_action.items()
            },
            examples=json.loads(json.dumps(result.examples)),
            never_valid=result.never_valid,
            lag_hist=_lag_hist(result.lags_ms),
            phases=[]
            if phases is None
            else [
                PhaseReadCounts(int(n), int(bad), _lag_hist(lags))
                for n, bad, lags in zip(
                    phases.reads, phases.unpredictable, phases.lags_ms, strict=True
                )
            ],
            series_reads=[] if phases is None else phases.series_reads.tolist(),
            series_unpredictable=[] if phases is None else phases.series_unpredictable.tolist(),
            visibility=_visibility_rows(result.visibility, actions, items),
        )


def _visibility_rows(
    v: Visibility, actions: Mapping[int, str], items: Mapping[int, str]
) -> list[WriteVisibilityCounts]:
    """Per (action, item kind) of the fragment's writes, by name."""
    rows = []
    for (a, i), n in v.writes.items():
        hist = visibility_histogram(v.times_ns[a, i]).encode()
        name = actions.get(a, str(a)), items.get(i, str(i))
        rows.append(WriteVisibilityCounts(*name, n, v.never[a, i], v.unread[a, i], hist))
    return rows


def _lag_hist(lags_ms: list[float]) -> bytes:
    """HDR histogram (us) of staleness lags given in ms."""
    encoded: bytes = histogram_of((np.asarray(lags_ms) * 1_000_000).astype(np.int64)).encode()
    return encoded
