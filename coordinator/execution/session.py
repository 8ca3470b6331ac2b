"""Bringing up agents (local or listed) and their fragments: the target experiments on a
real store run on."""

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.execution import preflight
from bgbench.coordinator.execution.agent_names import Expanded, expand
from bgbench.coordinator.execution.agents import (
    AgentClient,
    Credentials,
    LocalAgents,
    spawn_local_agents,
)
from bgbench.coordinator.execution.experiment import Cluster, ProgressCallback, run_experiment
from bgbench.coordinator.execution.monitor_agents import MonitorAgents
from bgbench.coordinator.execution.resource_watch import (
    NodeExporterWatch,
    ResourceSource,
    store_watch,
)
from bgbench.coordinator.execution.sizing import resolve_local_layout
from bgbench.coordinator.execution.target import (
    ExperimentTarget,
    FaultRecorder,
    count_sessions,
    target_versions,
)
from bgbench.coordinator.records.events import (
    AgentProgress,
    AgentsRunning,
    AgentsStopped,
    EventSink,
    ProgressTap,
    Say,
)
from bgbench.coordinator.records.faults import should_retry
from bgbench.coordinator.scenario.run import ScenarioRun, is_warmup
from bgbench.errors import BGBenchError, SystemFault
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result import ExperimentResult
from bgbench.run_result.experiment import longest_phases


@dataclass
class AgentsTarget:
    """Runs experiments at (T, duration) on agents and the store they load; says what it
    runs on."""

    settings: Settings
    say: Say
    cluster: Cluster | None = None
    start_state: str = "carry"
    local: LocalAgents | None = None
    creds: Credentials | None = None
    record_fault: FaultRecorder | None = None
    # each agent's progress and the ticks go here (coordinator/records/events.py)
    events: EventSink | None = None
    # remote store hosts watched during each experiment (node_exporter, monitor agents)
    sources: tuple[ResourceSource, ...] = ()
    client_bound_said: bool = False  # the loud line is said once; each result keeps its own

    def run(
        self, threads: int, duration_s: float, experiment_id: str, rate: float | None = None
    ) -> ExperimentResult:
        preflight.check_threads_cover(threads, self.min_threads())
        self.rejoin()
        attempt = 0
        while True:
            exp_id = experiment_id if attempt == 0 else f"{experiment_id}-retry{attempt}"
            result = self._run_once(threads, duration_s, exp_id, rate)
            result = count_sessions(result, self.settings)
            self._warn_client_bound(result)
            if not should_retry(self.settings.agents.on_failure, attempt, result.fault):
                return result
            if self.record_fault:
                self.record_fault(result)  # the failed attempt is recorded as what it was
            self.say(
                f"infrastructure failure at T={threads}: {result.fault}; "
                "retrying on the agents that answer"
            )
            self.recover()
            attempt += 1

    def _run_once(
        self, threads: int, duration_s: float, experiment_id: str, rate: float | None = None
    ) -> ExperimentResult:
        assert self.cluster is not None
        addresses = [c.address for c in self.cluster.clients]
        on_progress: ProgressCallback | None = None
        events = self.events
        if events is not None:
            tap = ProgressTap(events, addresses, experiment_id, threads, duration_s)

            def both(i: int, p: pb.Progress) -> None:
                events.emit(AgentProgress(experiment_id, i, p))
                tap.update(i, p)

            on_progress = both
            events.emit(AgentsRunning(experiment_id, tuple(addresses), duration_s))
        scenario = None
        if self.settings.scenario and not is_warmup(experiment_id):
            scenario = ScenarioRun(
                self.settings, len(addresses), duration_s, experiment_id, self.say, events
            )
        try:
            return run_experiment(
                self.cluster,
                self.settings,
                threads,
                duration_s,
                experiment_id,
                on_progress,
                self.start_state,
                self.settings.agents.heartbeat_timeout,
                rate,
                self.sources,
                scenario,
            )
        finally:
            if events is not None:
                events.emit(AgentsStopped(experiment_id))

    def _warn_client_bound(self, result: ExperimentResult) -> None:
        """A loud line for the first experiment the client bound (sla.client_bound = warn:
        it still passes; fail: its verdict says so too); later ones are marked in their
        own lines and records, not warned of again."""
        r = result.resources
        if r is not None and r.bottleneck.client_bound and not self.client_bound_said:
            self.client_bound_said = True
            self.say(
                f"WARNING: T={result.threads} was bound by the client, not the store: "
                f"{r.bottleneck.text} (later client-bound experiments are marked CLIENT-BOUND)"
            )

    def rejoin(self) -> None:
        """Before an experiment: a listed agent dropped earlier that answers again rejoins
        (the fragments are laid out again over all and reloaded)."""
        assert self.cluster is not None
        listed, _ = listed_agents(self.settings, self.creds)
        present = {c.address for c in self.cluster.clients}
        missing = [a for a in listed.addresses if a not in present]
        if missing and any(self._answers(a) for a in missing):
            self.say("an agent answers again: rejoining")
            self.recover()

    def recover(self) -> None:
        """Reconnect: dead local agents are respawned, listed agents that answer (restarted
        ones included) rejoin; the fragments are laid out again over them and reloaded."""
        assert self.cluster is not None
        self.cluster.close()
        if self.local is not None and self.local.processes:
            silent = frozenset(
                i for i, a in enumerate(self.local.addresses) if not self._answers(a)
            )
            respawned = self.local.respawn_dead(silent)
            if respawned:
                self.say(f"respawned local agents {respawned}")
            addresses = list(self.local.addresses)
            caps = self.settings.agents.capacities or [1.0] * len(addresses)
        else:  # a name's addresses looked up again: replicas may have come or gone
            listed, self.creds = listed_agents(self.settings, self.creds)
            addresses = listed.addresses
            caps = listed.capacities or [1.0] * len(addresses)
        alive = [(a, c) for a, c in zip(addresses, caps, strict=True) if self._answers(a)]
        if not alive:
            raise SystemFault(f"no agent answers any more ({', '.join(addresses)})")
        self.say(f"continuing on {len(alive)} of {len(addresses)} agents")
        self.cluster = Cluster.connect(
            [a for a, _ in alive],
            [c for _, c in alive],
            self.creds,
            heartbeat_timeout=self.settings.agents.heartbeat_timeout,
        )
        self.cluster.prepare(self.settings)

    def _answers(self, address: str) -> bool:
        return _answers(address, self.creds, self.settings.agents.heartbeat_timeout)

    @property
    def store(self) -> str:
        assert self.cluster is not None
        return self.cluster.store_description

    def min_threads(self) -> int:
        """One thread per fragment: with fewer, a fragment idles and the requests no longer
        follow the global Zipfian."""
        assert self.cluster is not None
        return sum(f.load_processes for f in self.cluster.facts())

    def max_threads(self) -> int:
        if self.settings.rating.max_threads:
            return self.settings.rating.max_threads
        return self.fit_threads()

    def fit_threads(self) -> int:
        assert self.cluster is not None
        return preflight.max_threads(
            self.settings, [f.load_processes for f in self.cluster.facts()]
        )

    def hosts(self) -> list[dict[str, Any]]:
        assert self.cluster is not None
        out: list[dict[str, Any]] = []
        for c, cap in zip(self.cluster.clients, self.cluster.capacities, strict=True):
            f = c.facts
            assert f is not None
            out.append(
                {
                    "address": c.address,
                    "agent_id": f.agent_id,
                    "hostname": f.hostname,
                    "cores": f.cores,
                    "memory_bytes": f.memory_bytes,
                    "load_processes": f.load_processes,
                    "capacity_weight": cap,
                    "calibrated_ops_per_s": f.capacity or None,
                    "bgbench": f.bgbench_version,
                    "python": f.python_version,
                }
            )
        return out

    def versions(self) -> dict[str, str]:
        return target_versions(self.store)


def credentials(settings: Settings, local_token: str | None = None) -> Credentials:
    a = settings.agents
    token = a.token or os.environ.get("BGBENCH_TOKEN") or local_token
    if a.tls is None:
        return Credentials(token=token)

    def read(path: Path | None) -> bytes | None:
        return Path(path).read_bytes() if path else None

    return Credentials(
        token=token,
        ca=read(a.tls.ca_file),
        cert=read(a.tls.cert_file),
        key=read(a.tls.key_file),
        server_name=a.tls.server_name,
    )


def listed_agents(settings: Settings, creds: Credentials | None) -> tuple[Expanded, Credentials]:
    """The listed agents, names that stand for many expanded (agent_names.py), and the
    credentials that check each expanded agent's certificate for its name."""
    listed = expand(settings.agents.addresses, settings.agents.capacities)
    return listed, replace(creds or Credentials(), server_names=listed.server_names)


def _answers(address: str, creds: Credentials | None, heartbeat_timeout: float) -> bool:
    client = AgentClient(address, creds, heartbeat_timeout)
    try:
        client.handshake()
        return True
    except BGBenchError:
        return False
    finally:
        client.close()


@contextmanager
def bring_up(
    settings: Settings, work_dir: Path, say: Say, events: EventSink | None = None
) -> Iterator[AgentsTarget]:
    """Reach the listed agents, or spawn local ones; load every fragment; on the way out,
    stop what was spawned (listed agents keep running). Progress also goes to `events`."""
    preflight.check_store(settings)
    resolve_local_layout(settings, None)  # callers that did not size the layout themselves
    a = settings.agents
    processes = a.processes if isinstance(a.processes, int) else 1  # resolved above
    local = LocalAgents()
    capacities = a.capacities
    if a.addresses:
        listed, creds = listed_agents(settings, credentials(settings))
        addresses, capacities = listed.addresses, listed.capacities
        named = f" ({listed.said()})" if listed.names else ""
        say(f"connecting to {len(addresses)} agents{named}; store {settings.store.name}")
    else:
        preflight.check_local_memory(settings)
        preflight.check_fit(settings, [processes] * a.local)
        token = secrets.token_urlsafe(24)  # local agents too refuse calls without it
        creds = credentials(settings, token)
        say(
            f"starting {a.local} local agents x {a.processes} load processes; "
            f"store {settings.store.name}; work in {work_dir}"
        )
        local = spawn_local_agents(a.local, processes, work_dir, a.start_timeout, creds.token)
        addresses = local.addresses
    cluster = target = exporters = monitors = None
    try:
        exporters = NodeExporterWatch(settings.resources.node_exporters)
        if settings.resources.monitors:
            monitors = MonitorAgents(
                list(settings.resources.monitors), creds, store_watch(settings), a.heartbeat_timeout
            )
        cluster = Cluster.connect(
            addresses, capacities, creds, a.capacity == "measure", a.heartbeat_timeout
        )
        if a.capacity == "measure" and not a.capacities:
            say(f"measured agent capacities: {list(cluster.capacities)}")
            if not a.addresses or addresses == a.addresses:  # one weight per listed agent
                a.capacities = list(cluster.capacities)  # recorded: a resume reuses them
        if a.addresses:
            facts = cluster.facts()
            weights = list(cluster.capacities)
            preflight.check_memory(
                settings,
                [
                    (f"agent {c.address}", f.memory_bytes, w / sum(weights))
                    for c, f, w in zip(cluster.clients, facts, weights, strict=True)
                ],
            )
            preflight.check_fit(settings, [f.load_processes for f in facts])
        replies = cluster.prepare(settings)
        entities = sum(f.members for r in replies for f in r.fragments)
        load_s = max(f.load_seconds for r in replies for f in r.fragments)
        phases = longest_phases(cluster.load_phases)
        named = ", ".join(f"{name} {s:.1f} s" for name, s in phases.items())
        say(
            f"loaded {entities:,} entities in {len(cluster.layout.capacities)} fragments in "
            f"{load_s:.1f} s{f' ({named})' if named else ''} on {cluster.store_description}"
        )
        target = AgentsTarget(
            settings,
            say,
            cluster=cluster,
            start_state=settings.rating.state,
            local=local,
            creds=creds,
            events=events,
            sources=(exporters, *([monitors] if monitors else [])),
        )
        yield target
    finally:
        for watch in (exporters, monitors):
            if watch is not None:
                watch.close()
        if target is not None and target.cluster is not None:
            target.cluster.close()
        elif cluster is not None:
            cluster.close()
        local.close()


class AgentsKind:
    """A store binding's name: agents load and drive the store."""

    measures_a_store = True

    def __init__(self, other_names: list[str]) -> None:
        self.other_names = other_names  # what else a store name may be (in refusals)

    def resolve_layout(self, settings: Settings, threads: int | None) -> None:
        resolve_local_layout(settings, threads)

    def check_store(self, settings: Settings) -> None:
        preflight.check_store(settings, self.other_names)

    def check_before_start(self, settings: Settings, threads: int | None = None) -> None:
        """Bad input before the store: what needs no agent (listed agents' processes are
        unknown until they answer); a run's T covers every local fragment."""
        preflight.check_pacing(settings)
        self.check_store(settings)
        a = settings.agents
        if a.addresses:
            preflight.check_memory(settings, [])  # the coordinator's share; agents' later
            return
        resolve_local_layout(settings, None)
        preflight.check_local_memory(settings)
        processes = a.processes
        assert isinstance(processes, int)  # resolve_local_layout made it concrete
        preflight.check_fit(settings, [processes] * a.local)
        if threads is not None:
            preflight.check_threads_cover(threads, a.local * processes)

    @contextmanager
    def bring_up(
        self, settings: Settings, work_dir: Path, say: Say, events: EventSink | None
    ) -> Iterator[ExperimentTarget]:
        with bring_up(settings, work_dir, say, events) as target:
            yield target
