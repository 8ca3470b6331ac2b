"""One experiment at T threads across connected agents: run, validate, merge, judge."""

import json
import resource
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bgbench.coordinator.configuration.config import RatingConfig, Settings, SLAConfig
from bgbench.coordinator.configuration.plan import AgentSlot, FragmentLayout, layout, split_threads
from bgbench.coordinator.configuration.redaction import redact_text
from bgbench.coordinator.execution.agent_checks import AgentFault
from bgbench.coordinator.execution.agents import HEARTBEAT_TIMEOUT_S, AgentClient, Credentials
from bgbench.coordinator.execution.run_watch import watch_run
from bgbench.coordinator.execution.steady import (
    Steadiness,
    Tick,
    analyse,
    tick_of,
    window_within_counts,
)
from bgbench.coordinator.records.faults import fault_time
from bgbench.coordinator.records.metrics import LatencySummary, Verdict, decode, judge, share_within
from bgbench.errors import BGBenchError, SystemFault, UserError
from bgbench.protos import START_READIED, new_histogram
from bgbench.protos import worker_pb2 as pb
from bgbench.worker.contracts import sum_counts
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


@dataclass
class ReadFigures:
    reads: int = 0
    unpredictable: int = 0


@dataclass
class AgentOutcome:
    address: str
    threads: int
    actions: int = 0
    sessions: int = 0
    errors: int = 0
    elapsed_s: float = 0.0
    cpu_percent: float = 0.0  # of one core, all load processes
    load_processes: int = 0
    saturated: bool = False
    embedded_store: bool = False
    within_percent: float = 100.0  # of actions within beta
    session_within_percent: float = 100.0  # of sessions whose every action is within beta
    reads: int = 0
    unpredictable_reads: int = 0
    sessions_read: int = 0
    unpredictable_sessions: int = 0
    log_records_written: int = 0
    log_records_read: int = 0
    validation_s: float = 0.0
    never_valid: int = 0
    lag_hist: str = ""  # HDR histogram (us) of the staleness lag of unpredictable reads
    state_uncertain: bool = False
    aborted: str = ""
    passed: bool = False
    reasons: list[str] = field(default_factory=list)
    error_counts: list[dict[str, Any]] = field(default_factory=list)
    log_dir: str = ""
    start_state: str = ""
    store_counters: dict[str, int] = field(default_factory=dict)  # the binding's own counts
    response_hist: str = ""  # HDR histogram (us), base64: exact merging later
    session_hist: str = ""
    # The client watching itself: each action's delay between its intended start and its
    # store call (p99), the worst client lag the progress stream saw, how socialites ran.
    client_delay_p99_ms: float = 0.0
    client_lag_max_ms: float = 0.0
    concurrency: str = ""
    client_cpu_us_per_action: float = 0.0
    # Validation per tracked item kind and per action that read, by name.
    by_item: dict[str, ReadFigures] = field(default_factory=dict)
    by_action: dict[str, ReadFigures] = field(default_factory=dict)
    per_unit: dict[str, int] = field(default_factory=dict)  # units of the mix played, by name
    phase_seconds: dict[str, float] = field(default_factory=dict)  # named phases of the load
    # What only the workload knows, one entry per fragment of the agent (JSON values).
    run_payload: list[Any] = field(default_factory=list)
    validation_payload: list[Any] = field(default_factory=list)

    @property
    def unpredictable_percent(self) -> float:
        return 100.0 * self.unpredictable_reads / self.reads if self.reads else 0.0


@dataclass
class ActionFigures:
    action: str
    count: int
    errors: int
    response: LatencySummary
    service: LatencySummary
    within_percent: float


@dataclass
class ExperimentResult:
    experiment_id: str
    threads: int
    duration_s: float
    elapsed_s: float
    store: str
    actions: int
    sessions: int
    errors: int
    actions_per_s: float
    sessions_per_s: float
    within_percent: float
    unpredictable_percent: float
    reads: int
    unpredictable_reads: int
    per_action: list[ActionFigures]
    overall: LatencySummary
    agents: list[AgentOutcome]
    passed: bool
    fault: str = ""  # an infrastructure failure: the experiment is not rated
    lag: LatencySummary = field(default_factory=lambda: LatencySummary(0, 0, 0, 0, 0, 0))
    never_valid: int = 0  # unpredictable reads of a value the item never held
    coordinator_cpu_s: float = 0.0  # the coordinator's CPU while the agents ran
    progress_events: int = 0  # progress messages received from all agents
    # The load processes' CPU per action over all agents (their whole run: start, actions,
    # summaries); the null store's figure is the framework's own cost.
    client_cpu_us_per_action: float = 0.0
    fault_at: float = 0.0  # when the infrastructure failure was found (Unix time)
    # Over all agents: validation by item kind and by action, a few unpredictable reads
    # (each with its agent), the binding's own counts, the units of the mix played, and
    # the named phases of the load (the longest agent's).
    by_item: dict[str, ReadFigures] = field(default_factory=dict)
    by_action: dict[str, ReadFigures] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    store_counters: dict[str, int] = field(default_factory=dict)
    per_unit: dict[str, int] = field(default_factory=dict)
    phase_seconds: dict[str, float] = field(default_factory=dict)
    # The progress series and the steady part of it that the figures above rate (None:
    # an experiment without a progress stream).
    steady: Steadiness | None = None
    target_rate: float = 0.0  # open loop: the arrival rate asked for, actions/s (0: closed)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


ProgressCallback = Callable[[int, pb.Progress], None]


def run_experiment(
    cluster: Cluster,
    settings: Settings,
    threads: int,
    duration_s: float,
    experiment_id: str,
    on_progress: ProgressCallback | None = None,
    start_state: str = "carry",
    heartbeat_timeout: float = 5.0,
    rate: float | None = None,
) -> ExperimentResult:
    """One experiment; `rate` (actions/s over all agents) runs it open loop, else
    settings.run.target_rate does, else it is closed loop."""
    rate = rate or settings.run.target_rate or 0.0
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
    except SystemFault as exc:
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

    workers = [threading.Thread(target=drive, args=(i,), daemon=True) for i in range(len(shares))]
    for w in workers:
        w.start()
    watch_run(cluster.clients, workers, last_seen, heartbeat_timeout, lambda m: fail(m, None))
    coordinator_cpu = _cpu_seconds() - cpu_started
    if faults or any(r is None for r in results):
        fault = "; ".join(faults) or "an agent ended the experiment without a result"
        return _faulted(
            experiment_id, threads, duration_s, cluster, outcomes, fault, fault_at[0] or time.time()
        )

    validations = _parallel(
        [partial(c.validate, experiment_id) for c in cluster.clients], tolerate=True
    )
    ran = [r for r in results if r is not None]
    result = _merge(
        experiment_id, threads, duration_s, cluster, outcomes, ran, validations, settings
    )
    result.coordinator_cpu_s, result.progress_events = coordinator_cpu, events[0]
    result.target_rate = rate
    return rate_steady(result, ticks, settings.sla, settings.rating)


def rate_steady(
    result: ExperimentResult, ticks: list[list[Tick]], sla: SLAConfig, rating: RatingConfig
) -> ExperimentResult:
    """The experiment's figures from its steady window: throughput, the share within beta
    (each agent's and in all) and the verdicts; an unstable run fails, not rated."""
    steady = analyse(ticks, result.duration_s, rating.steady_state, rating.confidence)
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


def faulted(
    experiment_id: str,
    threads: int,
    duration_s: float,
    store: str,
    outcomes: list[AgentOutcome],
    fault: str,
    at: float,
) -> ExperimentResult:
    """An experiment an infrastructure failure ended (or kept from starting)."""
    empty = LatencySummary.of(new_histogram())
    return ExperimentResult(
        experiment_id, threads, duration_s, 0.0, store, 0, 0, 0, 0.0, 0.0,
        0.0, 0.0, 0, 0, [], empty, outcomes, False, fault, fault_at=at,
    )  # fmt: skip


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


def _merge(
    experiment_id: str,
    threads: int,
    duration_s: float,
    cluster: Cluster,
    outcomes: list[AgentOutcome],
    results: list[pb.RunResult],
    validations: list[pb.ValidateReply | BaseException],
    settings: Settings,
) -> ExperimentResult:
    bound_us = settings.sla.beta_ms * 1000
    pooled_resp: dict[str, Any] = {}
    pooled_serv: dict[str, Any] = {}
    counts: dict[str, list[int]] = {}
    overall = new_histogram()
    faults: list[str] = []
    # CPU over the experiment's wall time, not each agent's own: an agent whose threads all
    # ended early (or that had none) must not report its few ms of work as a busy core.
    run_elapsed = max((r.elapsed_seconds for r in results), default=0.0)
    examples: list[dict[str, Any]] = []
    phases = cluster.load_phases or [{} for _ in outcomes]
    for out, res, val, load in zip(outcomes, results, validations, phases, strict=True):
        agent_hist = new_histogram()
        for stats in res.per_action:
            resp, serv = decode(stats.response_hist), decode(stats.service_hist)
            agent_hist.add(resp)
            pooled_resp.setdefault(stats.action, new_histogram()).add(resp)
            pooled_serv.setdefault(stats.action, new_histogram()).add(serv)
            c = counts.setdefault(stats.action, [0, 0])
            c[0] += stats.count
            c[1] += stats.errors
        overall.add(agent_hist)
        out.actions, out.sessions, out.errors = res.actions, res.sessions, res.errors
        out.elapsed_s = res.elapsed_seconds
        out.cpu_percent = 100.0 * res.cpu_seconds / run_elapsed if run_elapsed else 0.0
        out.load_processes = res.load_processes
        out.saturated, out.embedded_store = res.engine_saturated, res.embedded_store
        out.within_percent = share_within(agent_hist, bound_us)
        session_hist = decode(res.session_hist)
        out.session_within_percent = share_within(session_hist, bound_us)
        out.response_hist = agent_hist.encode().decode()
        out.session_hist = session_hist.encode().decode()
        out.start_state = res.start_state
        out.store_counters = dict(res.store_counters)
        out.per_unit = dict(res.per_unit)
        out.phase_seconds = dict(load)
        out.run_payload = _payload(res.workload_payload)
        out.log_records_written, out.log_dir = res.log_records, res.log_dir
        out.state_uncertain, out.aborted = res.state_uncertain, res.aborted
        delays = decode(res.client_delay_hist) if res.client_delay_hist else new_histogram()
        out.client_delay_p99_ms = delays.get_value_at_percentile(99) / 1000
        out.client_lag_max_ms = max(out.client_lag_max_ms, res.loop_lag_max_ms)
        out.concurrency = res.concurrency
        out.client_cpu_us_per_action = 1e6 * res.cpu_seconds / res.actions if res.actions else 0.0
        out.error_counts = [
            {"action": e.action, "type": e.type, "count": e.count, "sample": e.sample}
            for e in res.error_counts
        ]
        if isinstance(val, BaseException):
            faults.append(f"validation on {out.address} failed: {val}")
        else:
            out.reads, out.unpredictable_reads = val.reads, val.unpredictable_reads
            out.sessions_read, out.unpredictable_sessions = val.sessions, val.unpredictable_sessions
            out.log_records_read, out.validation_s = val.log_records, val.seconds
            out.never_valid, out.lag_hist = val.never_valid, decode(val.lag_hist).encode().decode()
            out.by_item = _read_figures(val.by_item)
            out.by_action = _read_figures(val.by_action)
            out.validation_payload = _payload(val.workload_payload)
            shown = json.loads(val.examples_json) if val.examples_json else []
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
    elapsed = max(o.elapsed_s for o in outcomes) or duration_s
    actions = sum(o.actions for o in outcomes)
    sessions = sum(o.sessions for o in outcomes)
    reads = sum(o.reads for o in outcomes)
    unpredictable = sum(o.unpredictable_reads for o in outcomes)
    per_action = [
        ActionFigures(
            name,
            counts[name][0],
            counts[name][1],
            LatencySummary.of(pooled_resp[name]),
            LatencySummary.of(pooled_serv[name]),
            share_within(pooled_resp[name], bound_us),
        )
        for name in sorted(counts, key=_action_order(settings))
    ]
    fault = "; ".join(faults)
    lags = new_histogram()
    for o in outcomes:
        if o.lag_hist:
            lags.add(decode(o.lag_hist.encode()))
    return ExperimentResult(
        lag=LatencySummary.of(lags),
        never_valid=sum(o.never_valid for o in outcomes),
        experiment_id=experiment_id,
        threads=threads,
        duration_s=duration_s,
        elapsed_s=elapsed,
        store=cluster.store_description,
        actions=actions,
        sessions=sessions,
        errors=sum(o.errors for o in outcomes),
        actions_per_s=actions / elapsed,
        sessions_per_s=sessions / elapsed,
        within_percent=share_within(overall, bound_us),
        unpredictable_percent=100.0 * unpredictable / reads if reads else 0.0,
        reads=reads,
        unpredictable_reads=unpredictable,
        per_action=per_action,
        overall=LatencySummary.of(overall),
        agents=outcomes,
        passed=not fault and all(o.passed for o in outcomes),
        fault=fault,
        client_cpu_us_per_action=(
            1e6 * sum(r.cpu_seconds for r in results) / actions if actions else 0.0
        ),
        fault_at=time.time() if fault else 0.0,
        by_item=_sum_figures([o.by_item for o in outcomes]),
        by_action=_sum_figures([o.by_action for o in outcomes]),
        examples=examples,
        store_counters=sum_counts([o.store_counters for o in outcomes]),
        per_unit=sum_counts([o.per_unit for o in outcomes]),
        phase_seconds=longest_phases([o.phase_seconds for o in outcomes]),
    )


def _read_figures(rows: Any) -> dict[str, ReadFigures]:
    return {r.name: ReadFigures(r.reads, r.unpredictable) for r in rows}


def _sum_figures(parts: list[dict[str, ReadFigures]]) -> dict[str, ReadFigures]:
    total: dict[str, ReadFigures] = {}
    for part in parts:
        for name, f in part.items():
            t = total.setdefault(name, ReadFigures())
            t.reads += f.reads
            t.unpredictable += f.unpredictable
    return total


def longest_phases(parts: list[dict[str, float]]) -> dict[str, float]:
    """Per named phase, the longest: fragments and agents load side by side."""
    out: dict[str, float] = {}
    for part in parts:
        for name, seconds in part.items():
            out[name] = max(out.get(name, 0.0), seconds)
    return out


def _payload(text: str) -> list[Any]:
    """The agent's JSON array of its fragments' workload payloads ([] when none)."""
    if not text:
        return []
    value = json.loads(text)
    return value if isinstance(value, list) else [value]


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
