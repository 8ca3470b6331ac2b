"""One experiment at T threads across connected agents: run, validate, merge, judge."""

import json
import resource
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bgbench.coordinator.configuration.config import RatingConfig, Settings, SLAConfig
from bgbench.coordinator.configuration.plan import AgentSlot, FragmentLayout, layout, split_threads
from bgbench.coordinator.configuration.redaction import redact_text
from bgbench.coordinator.execution.agent_checks import AgentFault
from bgbench.coordinator.execution.agents import HEARTBEAT_TIMEOUT_S, AgentClient, Credentials
from bgbench.coordinator.execution.resource_watch import (
    ExperimentResources,
    ResourceSource,
    store_watch,
)
from bgbench.coordinator.execution.run_watch import watch_run
from bgbench.coordinator.execution.steady import (
    Ended,
    Tick,
    analyse,
    tick_of,
    window_within_counts,
)
from bgbench.coordinator.records.faults import fault_time
from bgbench.coordinator.records.metrics import Verdict, client_bound_reason, judge
from bgbench.coordinator.scenario.run import ScenarioRun
from bgbench.errors import BGBenchError, SystemFault, UserError
from bgbench.protos import START_READIED
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result import AgentOutcome, ExperimentResult, RunResult
from bgbench.run_result.experiment import longest_phases
from bgbench.workloads import registry

EXAMPLES_PER_AGENT = 10  # unpredictable reads kept with a result, as the validator shows them


@dataclass
class Cluster:
    clients: list[AgentClient]
    capacities: list[float]
    layout: FragmentLayout
    store_description: str = ""
    # Named phases of each agent's load (the longest of its fragments'), set by prepare.
    load_phases: list[dict[str, float]] = field(default_factory=list)

    @classmethod
    def connect(
        cls,
        addresses: list[str],
        capacities: list[float] | None,
        credentials: Credentials | None = None,
        measure: bool = False,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT_S,
    ) -> "Cluster":
        """Handshake with every agent; one line names all that did not answer. With
        `measure` (and no capacities given), weigh agents by their calibrated capacity.
        A call to an agent silent for `heartbeat_timeout`, or whose load makes no progress
        for as long, fails (coordinator/records/faults.py)."""
        clients = [AgentClient(a, credentials, heartbeat_timeout) for a in addresses]
        measure = measure and not capacities
        facts = _parallel([partial(c.handshake, measure) for c in clients], tolerate=True)
        failed = [f for f in facts if isinstance(f, BaseException)]
        if failed:
            for c in clients:
                c.close()
            # A refusal, or an answer out of bounds, is not "did not answer": it is raised.
            named = [f for f in failed if isinstance(f, UserError | AgentFault)]
            if named:
                raise named[0]
            raise SystemFault(
                f"{len(failed)} of {len(clients)} agents did not answer: "
                + "; ".join(str(f).removeprefix("agent ") for f in failed)
            )
        if measure:
            top = max(f.capacity for f in facts)
            # one decimal of the ratio: calibration noise (about 10%) rarely moves it
            caps = [max(0.1, round(f.capacity / top, 1)) for f in facts]
        else:
            caps = capacities or [1.0] * len(clients)
        slots = [AgentSlot(f.load_processes, cap) for f, cap in zip(facts, caps, strict=True)]
        return cls(clients, caps, layout(slots))

    def prepare(self, settings: Settings) -> list[pb.PrepareReply]:
        """The schema once, by the first agent; then every agent loads its fragments, in
        parallel: DDL beside a load deadlocks (PostgreSQL) or fails (SQLite)."""
        requests = [
            pb.PrepareRequest(
                workload=settings.workload.name,
                workload_config_json=settings.workload_config.model_dump_json(),
                store=settings.store.name,
                store_options_json=json.dumps(settings.store.options),
                capacities=self.layout.capacities,
                fragments=frags,
                phase=pb.PREPARE_LOAD,
            )
            for frags in self.layout.fragments
        ]
        schema = pb.PrepareRequest()
        schema.CopyFrom(requests[0])
        schema.phase = pb.PREPARE_SCHEMA
        self.clients[0].prepare(schema)
        calls = [partial(c.prepare, r) for c, r in zip(self.clients, requests, strict=True)]
        replies: list[pb.PrepareReply] = _parallel(calls, on_failure=self.cancel)
        self.store_description = redact_text(replies[0].store_description)  # a URL's password
        self.load_phases = [
            longest_phases([dict(f.phase_seconds) for f in r.fragments]) for r in replies
        ]
        return replies

    def ready(self, start_state: str) -> None:
        """Every agent makes its fragments' state exact (carry, reload, readback) before any
        fragment starts its run: a reload beside a running fragment would disturb it (a
        CASQL load flushes the shared cache; a SQLite load holds the file)."""
        request = pb.PrepareRequest(phase=pb.PREPARE_READY, start_state=start_state)
        _parallel([partial(c.prepare, request) for c in self.clients], on_failure=self.cancel)

    def cancel(self) -> None:
        """End every call in flight to every agent (one failed: the step is over)."""
        for c in self.clients:
            c.cancel()

    def facts(self) -> list[pb.HandshakeReply]:
        return [c.facts for c in self.clients if c.facts is not None]

    def close(self) -> None:
        for c in self.clients:
            c.close()


ProgressCallback = Callable[[int, pb.Progress], None]


def run_experiment(
    cluster: Cluster,
    settings: Settings,
    threads: int,
    duration_s: float,
    experiment_id: str,
    on_progress: ProgressCallback | None = None,
    start_state: str = "carry",
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT_S,
    rate: float | None = None,
    sources: Sequence[ResourceSource] = (),
    scenario: ScenarioRun | None = None,
) -> ExperimentResult:
    """One experiment; `rate` (actions/s over all agents) runs it open loop, else
    settings.run.target_rate does, else it is closed loop. Its resources are the agents'
    samples of their hosts and those of `sources` (remote store hosts) over its run.
    With a `scenario`, its steps run from the runs' start and are undone when the runs end
    (however they end); the agents count errors and go on, the experiment is rated whole
    (no steady window) and its figures per phase are kept (result.scenario)."""
    rate = rate or settings.run.target_rate or 0.0
    resources = ExperimentResources([c.address for c in cluster.clients], list(sources))
    shares = split_threads(threads, cluster.capacities)
    outcomes = [AgentOutcome(c.address, n) for c, n in zip(cluster.clients, shares, strict=True)]
    results: list[pb.RunResult | None] = [None] * len(cluster.clients)
    faults: list[str] = []
    started = time.monotonic()
    cpu_started = _cpu_seconds()
    events = [0]
    ticks: list[list[Tick]] = [[] for _ in cluster.clients]
    bound_us = settings.sla.beta_ms * 1000
    last_seen = [started] * len(cluster.clients)
    lock = threading.Lock()
    fault_at = [0.0]  # when the first fault was found

    try:
        cluster.ready(start_state)
    except SystemFault as exc:  # a scenario has not started: nothing to undo
        return _faulted(
            experiment_id, threads, duration_s, cluster, outcomes, str(exc), fault_time(exc)
        )

    def fail(message: str, client: AgentClient | None) -> None:
        with lock:
            if faults and client is None:
                return  # a watcher's finding after the first failure is its consequence
            faults.append(message)
            fault_at[0] = fault_at[0] or time.time()
        for other in cluster.clients:  # end the experiment everywhere
            if other is not client:
                other.cancel_run()

    def drive(i: int) -> None:
        client = cluster.clients[i]
        request = pb.RunRequest(
            experiment_id=experiment_id,
            threads=shares[i],
            duration_seconds=duration_s,
            operation_count=_share(settings.run.operationcount, shares[i], threads),
            seed=settings.run.seed,
            start_state=START_READIED,
            target_rate=rate * shares[i] / threads if threads else 0.0,
            arrivals=settings.run.arrivals,
            watch=store_watch(settings).to_proto(),
            tolerate_errors=scenario is not None,
        )
        try:
            for event in client.run(request):
                last_seen[i] = time.monotonic()
                events[0] += 1
                if event.HasField("progress"):
                    p = event.progress
                    ticks[i].append(
                        tick_of(p.elapsed_seconds, p.actions, p.response_hist_delta, bound_us)
                    )
                    resources.progress(i, p)
                    lag = event.progress.client_lag_ms
                    outcomes[i].client_lag_max_ms = max(outcomes[i].client_lag_max_ms, lag)
                    if on_progress:
                        on_progress(i, event.progress)
                elif event.HasField("result"):
                    results[i] = event.result
        except BGBenchError as exc:
            if not faults:  # the first failure; the others are its consequences
                lost = time.monotonic() - started
                fail(f"{exc} (after {lost:.1f} s of the experiment)", client)

    if scenario is not None:
        on_progress = scenario.feeding(on_progress)
    workers = [threading.Thread(target=drive, args=(i,), daemon=True) for i in range(len(shares))]
    resources.start(duration_s)
    try:
        if scenario is not None:
            scenario.start()
        for w in workers:
            w.start()
        watch_run(cluster.clients, workers, last_seen, heartbeat_timeout, lambda m: fail(m, None))
    finally:
        resources.stop()
        if scenario is not None:
            scenario.finish()  # the steps stop and are undone, whatever ended the runs
    coordinator_cpu = _cpu_seconds() - cpu_started
    if scenario is not None and scenario.undo_failures:
        faults.append("the scenario could not be undone: " + "; ".join(scenario.undo_failures))
    if faults or any(r is None for r in results):
        fault = "; ".join(faults) or "an agent ended the experiment without a result"
        return _faulted(
            experiment_id, threads, duration_s, cluster, outcomes, fault, fault_at[0] or time.time()
        )

    validations = _parallel(
        [partial(_validate, c, experiment_id, i, scenario) for i, c in enumerate(cluster.clients)],
        tolerate=True,
    )
    ran = [r for r in results if r is not None]
    result = _experiment_result(
        experiment_id, threads, duration_s, cluster, outcomes, ran, validations, settings
    )
    result.coordinator_cpu_s, result.progress_events = coordinator_cpu, events[0]
    result.target_rate = rate
    if scenario is None:
        ended = [Ended(list(r.ended_per_interval), r.ended_interval_seconds, r.elapsed_seconds)
                 for r in ran]  # fmt: skip
        result = rate_steady(result, ticks, settings.sla, settings.rating, ended)
    else:  # rated whole: its phases, not a steady window, say what happened when
        result.scenario = scenario.figures(validations)
    result.resources = resources.finish(result, settings)
    return judge_resources(result, settings.sla)


def _validate(
    client: AgentClient, experiment_id: str, agent: int, scenario: ScenarioRun | None
) -> pb.ValidateReply:
    if scenario is None:
        return client.validate(experiment_id)
    args = scenario.validate_args(agent)
    return client.validate(experiment_id, args.phase_starts_s, args.series_bin_s)


def judge_resources(result: ExperimentResult, sla: SLAConfig) -> ExperimentResult:
    """With sla.client_bound = fail, an experiment bound by the client fails: one reason,
    given with its first agent's (the load is not the store's limit)."""
    reason = client_bound_reason(result.resources, sla)
    if reason and result.agents and not result.fault:
        first = result.agents[0]
        first.reasons.append(reason)
        first.passed = result.passed = False
    return result


def rate_steady(
    result: ExperimentResult,
    ticks: list[list[Tick]],
    sla: SLAConfig,
    rating: RatingConfig,
    ended_by_agent: list[Ended] | None = None,
) -> ExperimentResult:
    """The experiment's figures from its steady window: throughput (from the actions' own
    end times, `ended_by_agent`, when every agent sent them), the share within beta (each
    agent's and in all) and the verdicts; an unstable run fails, not rated."""
    steady = analyse(
        ticks, result.duration_s, rating.steady_state, rating.confidence, ended_by_agent
    )
    result.steady = steady
    if not steady.tested or result.fault:
        return result
    result.actions_per_s = float(sum(steady.window_throughput) / len(steady.window_throughput))
    if sla.latency_scope == "action":
        hits = ended = 0
        for out, agent_ticks in zip(result.agents, ticks, strict=True):
            w, e = window_within_counts(agent_ticks, steady)
            if e:
                out.within_percent = 100.0 * w / e
            hits, ended = hits + w, ended + e
        if ended:
            result.within_percent = 100.0 * hits / ended
    for out in result.agents:
        verdict = _verdict(out, sla)
        if not steady.stable:
            verdict.passed = False
            verdict.reasons.append(
                f"unstable: the throughput did not settle within the first half of the "
                f"{result.duration_s:g} s run (its halves still differ after a "
                f"{steady.warmup_s:.1f} s warm-up): not rated"
            )
        out.passed, out.reasons = verdict.passed, verdict.reasons
    result.passed = all(o.passed for o in result.agents)
    return result


def _verdict(out: AgentOutcome, sla: SLAConfig) -> Verdict:
    """One agent's SLA verdict from its figures."""
    return judge(
        out.within_percent if sla.latency_scope == "action" else out.session_within_percent,
        out.unpredictable_percent,
        out.errors,
        out.saturated and not out.embedded_store,
        sla,
    )


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _share(total_ops: int, threads: int, all_threads: int) -> int:
    if not total_ops or not all_threads:
        return 0
    return -(-total_ops * threads // all_threads)


faulted = ExperimentResult.faulted


def _faulted(
    experiment_id: str,
    threads: int,
    duration_s: float,
    cluster: Cluster,
    outcomes: list[AgentOutcome],
    fault: str,
    at: float,
) -> ExperimentResult:
    store = cluster.store_description
    return faulted(experiment_id, threads, duration_s, store, outcomes, fault, at)


def _experiment_result(
    experiment_id: str,
    threads: int,
    duration_s: float,
    cluster: Cluster,
    outcomes: list[AgentOutcome],
    results: list[pb.RunResult],
    validations: list[pb.ValidateReply | BaseException],
    settings: Settings,
) -> ExperimentResult:
    """Each agent's outcome from its run and validation, judged; then over all agents."""
    bound_us = settings.sla.beta_ms * 1000
    runs = [RunResult.from_proto(r) for r in results]
    run_elapsed = max((r.elapsed for r in runs), default=0.0)
    faults: list[str] = []
    examples: list[dict[str, Any]] = []
    phases = cluster.load_phases or [{} for _ in outcomes]
    for out, run, val, load in zip(outcomes, runs, validations, phases, strict=True):
        out.take_run(run, run_elapsed, bound_us)
        out.phase_seconds = dict(load)
        if isinstance(val, BaseException):
            faults.append(f"validation on {out.address} failed: {val}")
        else:
            shown = out.take_validation(val)
            examples += [{"agent": out.address, **e} for e in shown[:EXAMPLES_PER_AGENT]]
            if out.log_records_read != out.log_records_written:
                faults.append(
                    f"{out.address} wrote {out.log_records_written} log records but "
                    f"{out.log_records_read} were read back"
                )
        verdict = _verdict(out, settings.sla)
        if out.aborted:
            faults.append(f"{out.address}: {out.aborted}")
        out.passed, out.reasons = verdict.passed, verdict.reasons
    head = (experiment_id, threads, duration_s, cluster.store_description)
    fault = "; ".join(faults)
    result = ExperimentResult.of_agents(
        head, outcomes, runs, _action_order(settings), bound_us, fault
    )
    result.fault_at = time.time() if fault else 0.0
    result.examples = examples
    return result


def _action_order(settings: Settings) -> Callable[[str], tuple[int, str]]:
    """Actions in the order their workload numbers them; names it does not know last."""
    codes = {name: code for code, name in registry.get(settings.workload.name).actions.items()}
    return lambda name: (codes.get(name, len(codes)), name)


def _parallel(
    calls: Sequence[Callable[[], Any]],
    tolerate: bool = False,
    on_failure: Callable[[], None] | None = None,
) -> list[Any]:
    """Every call in a thread of its own; their results (or exceptions, with `tolerate`).
    Without `tolerate` the first failure is raised once all have ended, and `on_failure`
    runs as soon as it happens (to cancel the others rather than wait out their work)."""
    out: list[Any] = [None] * len(calls)
    first: list[BaseException] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        try:
            out[i] = calls[i]()
        except BaseException as exc:
            out[i] = exc
            with lock:
                first.append(exc)
                is_first = len(first) == 1
            if is_first and on_failure is not None and not tolerate:
                on_failure()

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if first and not tolerate:
        raise first[0]
    return out


def new_experiment_id(threads: int) -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-T{threads}"


def save(result: ExperimentResult, results_dir: Path) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{result.experiment_id}.json"
    path.write_text(result.to_json())
    return path
