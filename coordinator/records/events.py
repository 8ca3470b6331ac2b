"""The live event seam: what a rating (or a run) is doing, as typed events, to any sink.

The coordinator emits a rating's start and end, each experiment's start and verdict, and
a progress tick per progress round of the agents (ProgressTap), with each agent's latest
sample of its host (HostLoad), and with each verdict what bound the experiment. Sinks (the
--events JSON lines file, the --metrics-port Prometheus registry, the console view)
subscribe through one Fanout. A scenario's steps are events too, each as it ends
(ScenarioStep). The console view also takes the events no file records (LIVE_ONLY): each
agent's raw progress report between an attempt's start and end on the agents, and each
finished experiment's full result. Work per tick is constant (one histogram merge, three
percentiles), so a sink cannot slow the engine more than its own write; a sink that raises
is dropped with one warning.
"""

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, ClassVar, Protocol

from bgbench.coordinator.records.metrics import decode, percentile
from bgbench.errors import UserError
from bgbench.inputs import open_output
from bgbench.protos import new_histogram
from bgbench.protos import worker_pb2 as pb
from bgbench.resources.model import Bottleneck, HostSample
from bgbench.run_result import ExperimentResult
from bgbench.run_result.scenario import StepRecord

log = logging.getLogger(__name__)

SILENT_AFTER_S = 2.5  # an agent whose last progress is older than this shows as silent
TICK_AT_LEAST_S = 1.0  # a tick waits for every agent's report, at most this long
MAX_NAME = 512  # characters of a host's name or a bottleneck's line an event carries


@dataclass(frozen=True)
class RatingStarted:
    kind: ClassVar[str] = "rating_start"
    rating_id: str
    objective: str  # a rating's objective, or "run" for one experiment
    store: str
    resumed: bool = False
    time: float = field(default_factory=time.time)


@dataclass(frozen=True)
class ExperimentStarted:
    kind: ClassVar[str] = "experiment_start"
    experiment_id: str
    phase: str  # warmup | search | final | sweep | run
    threads: int
    duration_s: float
    time: float = field(default_factory=time.time)


@dataclass(frozen=True)
class HostLoad:
    """An agent's host as its latest progress report sampled it (pb.HostSample, checked on
    arrival by coordinator/execution: bounded, finite): busy cores and of whom, memory,
    disk, network."""

    host: str  # the host's name as the agent gives it (untrusted text: escape it)
    host_id: str  # several agents on one host give the same
    cores: int
    cpu_cores: float  # busy cores, the whole host
    memory_used_bytes: int
    memory_total_bytes: int
    disk_busy: float  # the busiest disk's busy share
    disk_read_bytes_per_s: float
    disk_write_bytes_per_s: float
    net_rx_bytes_per_s: float
    net_tx_bytes_per_s: float
    load_cpu_cores: float | None  # this agent's load processes (None: none sampled)
    store_cpu_cores: float | None  # the store's processes on the host (None: not found)

    @classmethod
    def of(cls, msg: pb.HostSample) -> "HostLoad":
        s = HostSample.from_proto(msg)
        return cls(
            host=s.host[:MAX_NAME],
            host_id=s.host_id[:MAX_NAME],
            cores=s.cores,
            cpu_cores=s.cpu_cores,
            memory_used_bytes=s.memory_used_bytes,
            memory_total_bytes=s.memory_total_bytes,
            disk_busy=s.disk_busy,
            disk_read_bytes_per_s=s.disk_read_bytes_per_s,
            disk_write_bytes_per_s=s.disk_write_bytes_per_s,
            net_rx_bytes_per_s=s.net_rx_bytes_per_s,
            net_tx_bytes_per_s=s.net_tx_bytes_per_s,
            load_cpu_cores=None if s.load is None else s.load.cpu_cores,
            store_cpu_cores=None if s.store is None else s.store.cpu_cores,
        )


@dataclass(frozen=True)
class AgentHealth:
    address: str
    state: str  # waiting | ok | silent
    actions: int
    errors: int
    cpu_percent: float
    actions_per_s: float
    host: HostLoad | None = None  # its latest sample of its host (None: none sent)


@dataclass(frozen=True)
class ProgressTick:
    """One progress round over all agents: the interval since the previous tick."""

    kind: ClassVar[str] = "progress"
    experiment_id: str
    threads: int
    duration_s: float
    elapsed_s: float  # the slowest-reporting agent's elapsed time into the experiment
    actions_per_s: float  # the interval's throughput, summed over agents
    actions: int  # actions of this experiment so far, over agents
    new_actions: int  # since the previous tick
    errors: int  # of this experiment so far
    latency_count: int  # actions that ended in the interval
    p50_ms: float  # of the interval's merged HDR deltas (0 when none ended)
    p95_ms: float
    p99_ms: float
    agents: tuple[AgentHealth, ...]
    time: float = field(default_factory=time.time)


@dataclass(frozen=True)
class ExperimentEnded:
    kind: ClassVar[str] = "verdict"
    experiment_id: str
    phase: str
    threads: int
    duration_s: float
    verdict: str  # pass | fail | fault
    reasons: tuple[str, ...]
    actions_per_s: float
    within_percent: float
    p95_ms: float
    errors: int
    reads: int
    unpredictable_reads: int
    unpredictable_percent: float
    # what bound it (coordinator/reports: the bottleneck); "" : resources not measured
    bottleneck_kind: str = ""
    bottleneck: str = ""
    bottleneck_host: str = ""
    bottleneck_utilisation: float = 0.0
    client_bound: bool = False
    time: float = field(default_factory=time.time)

    @classmethod
    def of(cls, phase: str, r: ExperimentResult) -> "ExperimentEnded":
        verdict = {"fault": "fault", "passed": "pass", "failed": "fail"}[r.status]
        reasons = [r.fault] if r.fault else sorted({x for a in r.agents for x in a.reasons})
        b = r.bottleneck or Bottleneck(kind="", text="")
        return cls(
            experiment_id=r.experiment_id,
            phase=phase,
            threads=r.threads,
            duration_s=r.duration_s,
            verdict=verdict,
            reasons=tuple(reasons),
            actions_per_s=r.actions_per_s,
            within_percent=r.within_percent,
            p95_ms=r.overall.p95_ms,
            errors=r.errors,
            reads=r.reads,
            unpredictable_reads=r.unpredictable_reads,
            unpredictable_percent=r.unpredictable_percent,
            bottleneck_kind=b.kind,
            bottleneck=b.text[:MAX_NAME],
            bottleneck_host=b.host[:MAX_NAME],
            bottleneck_utilisation=b.utilisation,
            client_bound=b.client_bound,
        )


@dataclass(frozen=True)
class RatingEnded:
    kind: ClassVar[str] = "rating_end"
    rating_id: str
    status: str  # done | failed | interrupted
    soar: float | None = None
    soar_threads: int | None = None
    socialites: int | None = None
    message: str = ""
    time: float = field(default_factory=time.time)


@dataclass(frozen=True)
class CampaignStarted:
    """A campaign's start: its ratings' events follow, each between its own start and end."""

    kind: ClassVar[str] = "campaign_start"
    campaign_id: str
    resumed: bool = False
    time: float = field(default_factory=time.time)


@dataclass(frozen=True)
class CampaignEnded:
    kind: ClassVar[str] = "campaign_end"
    campaign_id: str
    status: str  # done | failed | interrupted
    message: str = ""
    time: float = field(default_factory=time.time)


@dataclass(frozen=True)
class AgentsRunning:
    """One attempt of an experiment starts on the agents (a retry is another attempt)."""

    kind: ClassVar[str] = "agents_running"
    experiment_id: str
    addresses: tuple[str, ...]
    duration_s: float


@dataclass(frozen=True)
class AgentProgress:
    """One agent's progress report, as it sent it (`agent` indexes the attempt's addresses)."""

    kind: ClassVar[str] = "agent_progress"
    experiment_id: str
    agent: int
    progress: pb.Progress


@dataclass(frozen=True)
class AgentsStopped:
    kind: ClassVar[str] = "agents_stopped"
    experiment_id: str


@dataclass(frozen=True)
class ExperimentResultReady:
    """A finished experiment of a rating with its whole result (the console's line)."""

    kind: ClassVar[str] = "experiment_result"
    phase: str
    result: ExperimentResult
    beta_ms: float


@dataclass(frozen=True)
class ScenarioStep:
    """A scenario's step ended (coordinator/scenario): offsets from the experiment's start;
    `line` is what the console says ('20.0 s: kill n2 — killed pid 1234')."""

    kind: ClassVar[str] = "scenario_step"
    experiment_id: str
    index: int
    action: str
    node: str
    label: str
    at_s: float
    started_s: float
    ended_s: float
    ok: bool
    detail: str
    exit_status: int | None
    line: str
    time: float = field(default_factory=time.time)

    @classmethod
    def of(cls, experiment_id: str, step: StepRecord, line: str) -> "ScenarioStep":
        return cls(
            experiment_id=experiment_id,
            index=step.index,
            action=step.action,
            node=step.node,
            label=step.label,
            at_s=step.at_s,
            started_s=step.started_s or 0.0,
            ended_s=step.ended_s or 0.0,
            ok=step.ok,
            detail=step.detail[:MAX_NAME],
            exit_status=step.exit_status,
            line=line[: 2 * MAX_NAME],
        )


@dataclass(frozen=True)
class JobStarting:
    """A campaign's job starts (the console draws a rule)."""

    kind: ClassVar[str] = "job_starting"
    campaign_id: str
    seq: int
    jobs: int
    label: str


Event = (
    RatingStarted
    | ExperimentStarted
    | ProgressTick
    | ExperimentEnded
    | RatingEnded
    | CampaignStarted
    | CampaignEnded
    | AgentsRunning
    | AgentProgress
    | AgentsStopped
    | ExperimentResultReady
    | JobStarting
    | ScenarioStep
)
LIVE_ONLY = (AgentsRunning, AgentProgress, AgentsStopped, ExperimentResultReady, JobStarting)


def to_dict(event: Event) -> dict[str, object]:
    return {"kind": event.kind, **asdict(event)}


Say = Callable[[str], None]  # a line for whoever watches (the CLI prints it on stderr)


def silent(line: str) -> None:
    return None


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...


class Fanout:
    """Every event to every sink, one event at a time (agents report from threads)."""

    def __init__(self, sinks: Sequence[EventSink] = ()) -> None:
        self.sinks = list(sinks)
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        with self._lock:
            for sink in list(self.sinks):
                try:
                    sink.emit(event)
                except Exception as exc:  # a broken sink never stops a rating
                    log.warning("event sink %s dropped: %s", type(sink).__name__, exc)
                    self.sinks.remove(sink)


class JsonLinesSink:
    """--events FILE: one JSON object per line, flushed per line, appended to the file.
    Only a regular file (a FIFO would block, a device is no record); a write that fails
    later (a full disk) drops the sink with one line and the rating goes on."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._file: IO[str] = open_output(path, "--events", append=True)
        except UserError as exc:
            raise UserError(f"{exc}; choose another file") from None

    def emit(self, event: Event) -> None:
        if isinstance(event, LIVE_ONLY):
            return
        try:
            self._file.write(json.dumps(to_dict(event), separators=(",", ":")) + "\n")
            self._file.flush()
        except OSError as exc:
            raise EventsWriteError(
                f"--events {self.path}: cannot write it ({exc.strerror or exc}); "
                "no more events are written there"
            ) from None

    def close(self) -> None:
        with contextlib.suppress(OSError):  # a failed write was reported when it failed
            self._file.close()


class EventsWriteError(Exception):
    """The events file stopped taking lines (Fanout drops the sink and says so)."""


class ProgressTap:
    """Turns one experiment's per-agent progress into ProgressTicks: a tick when every
    agent has reported since the last one (or TICK_AT_LEAST_S has passed), its latency
    quantiles from the merged HDR deltas of the interval."""

    def __init__(
        self,
        sink: EventSink,
        addresses: list[str],
        experiment_id: str,
        threads: int,
        duration_s: float,
    ) -> None:
        self.sink = sink
        self.addresses = addresses
        self.experiment_id = experiment_id
        self.threads = threads
        self.duration_s = duration_s
        self.latest: dict[int, pb.Progress] = {}
        self.hosts: dict[int, HostLoad] = {}  # each agent's latest sample of its host
        self.seen: dict[int, float] = {}  # monotonic time of each agent's last report
        self.previous: dict[int, tuple[float, int]] = {}
        self.rates: dict[int, float] = {}
        self.reported: set[int] = set()
        self.interval = new_histogram()
        self.ticked_actions = 0
        self.last_tick = time.monotonic()
        self._lock = threading.Lock()

    def update(self, i: int, progress: pb.Progress) -> None:
        now = time.monotonic()
        with self._lock:
            prev = self.previous.get(i)
            if prev and progress.elapsed_seconds > prev[0]:
                elapsed = progress.elapsed_seconds - prev[0]
                self.rates[i] = (progress.actions - prev[1]) / elapsed
            self.previous[i] = (progress.elapsed_seconds, progress.actions)
            self.latest[i] = progress
            if progress.HasField("host"):
                self.hosts[i] = HostLoad.of(progress.host)
            self.seen[i] = now
            self.reported.add(i)
            if progress.response_hist_delta:
                self.interval.add(decode(progress.response_hist_delta))
            if len(self.reported) < len(self.addresses) and now - self.last_tick < TICK_AT_LEAST_S:
                return
            tick = self._tick(now)
        self.sink.emit(tick)

    def _tick(self, now: float) -> ProgressTick:
        actions = sum(p.actions for p in self.latest.values())
        h = self.interval
        tick = ProgressTick(
            experiment_id=self.experiment_id,
            threads=self.threads,
            duration_s=self.duration_s,
            elapsed_s=min(p.elapsed_seconds for p in self.latest.values()),
            actions_per_s=sum(self.rates.values()),
            actions=actions,
            new_actions=actions - self.ticked_actions,
            errors=sum(p.errors for p in self.latest.values()),
            latency_count=h.get_total_count(),
            p50_ms=percentile(h, 50) / 1000,
            p95_ms=percentile(h, 95) / 1000,
            p99_ms=percentile(h, 99) / 1000,
            agents=tuple(self._health(i, a, now) for i, a in enumerate(self.addresses)),
        )
        self.ticked_actions = actions
        self.reported.clear()
        self.interval = new_histogram()
        self.last_tick = now
        return tick

    def _health(self, i: int, address: str, now: float) -> AgentHealth:
        p = self.latest.get(i)
        if p is None:
            return AgentHealth(address, "waiting", 0, 0, 0.0, 0.0)
        state = "ok" if now - self.seen[i] < SILENT_AFTER_S else "silent"
        rate = self.rates.get(i, 0)
        return AgentHealth(
            address, state, p.actions, p.errors, p.cpu_percent, rate, self.hosts.get(i)
        )
