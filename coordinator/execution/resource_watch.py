"""The resources of an experiment: every agent's samples of its host (Progress.host), the
remote store hosts' (node_exporter endpoints scraped here, monitor-only agents' Watch
streams), summarised over the rated window, and the bottleneck named from them.

A source that fails mid-experiment (an endpoint unreachable, a monitor gone) costs its
samples and adds a note: it never hangs or ends the experiment. Samples are bounded in
number per stream (MAX_SAMPLES).
"""

import threading
import time
from typing import Protocol

from bgbench.coordinator.configuration.config import Settings
from bgbench.errors import SystemFault
from bgbench.protos import worker_pb2 as pb
from bgbench.resources.bottleneck import name_bottleneck
from bgbench.resources.model import HostSample, ResourceFigures
from bgbench.resources.node_exporter import NodeExporter
from bgbench.resources.processes import StoreWatch
from bgbench.resources.summary import summarise
from bgbench.run_result import ExperimentResult

SAMPLE_EVERY_S = 0.5  # as the agents' progress (worker.run_coordination.PROGRESS_EVERY_S)
SCRAPE_TIMEOUT_S = 1.0  # a scrape slower than this is a failed one: the next comes soon
MAX_SAMPLES = 7200  # per stream: an hour at 0.5 s; beyond, samples are dropped (noted)
JOIN_S = 2.0  # stop() waits at most this for a scraping thread
AGENT_STREAM = "agent "


class ResourceSource(Protocol):
    """Samples hosts for one experiment at a time, in its own thread(s)."""

    def start(self, duration_s: float) -> None: ...

    def stop(self) -> tuple[dict[str, list[HostSample]], list[str]]:
        """Sampling ended; the samples by stream, and notes (sources lost)."""
        ...


def store_watch(settings: Settings) -> StoreWatch:
    """Which processes are the store's, as the settings say."""
    r = settings.resources
    return StoreWatch(
        pids=tuple(r.store_pids),
        names=tuple(r.store_process_names),
        container=r.store_container,
        discover=r.discover_store,
    )


class _Scrape:
    """One endpoint's series during one experiment."""

    def __init__(self, exporter: NodeExporter) -> None:
        self.exporter = exporter
        self.samples: list[HostSample] = []
        self.failures = 0
        self.first_error = ""
        self.thread: threading.Thread | None = None


class NodeExporterWatch:
    """node_exporter endpoints of remote store hosts, each scraped every SAMPLE_EVERY_S in a
    thread of its own while an experiment runs (stream "node_exporter HOST:PORT")."""

    def __init__(self, endpoints: list[str], timeout_s: float = SCRAPE_TIMEOUT_S) -> None:
        self.exporters = [NodeExporter(e, timeout_s) for e in endpoints]  # UserError: malformed
        self._stopping = threading.Event()
        self._scrapes: list[_Scrape] = []

    def start(self, duration_s: float) -> None:
        self.stop()
        self._stopping.clear()
        self._scrapes = [_Scrape(e) for e in self.exporters]
        started = time.monotonic()
        for scrape in self._scrapes:
            scrape.thread = threading.Thread(
                target=self._follow, args=(scrape, started, duration_s), daemon=True
            )
            scrape.thread.start()

    def _follow(self, scrape: _Scrape, started: float, duration_s: float) -> None:
        """Scrape on every tick until stopped (or well past the duration: a coordinator
        that never stops it does not leave it scraping for ever)."""
        tick = 0
        until = started + duration_s + 60.0
        while not self._stopping.is_set() and time.monotonic() < until:
            elapsed = time.monotonic() - started
            try:
                sample = scrape.exporter.sample(elapsed)
            except SystemFault as exc:  # ScrapeError: noted, the next tick tries again
                scrape.failures += 1
                scrape.first_error = scrape.first_error or str(exc)
            except Exception as exc:  # a watch never ends the experiment
                scrape.failures += 1
                scrape.first_error = scrape.first_error or f"{type(exc).__name__}: {exc}"
            else:
                if len(scrape.samples) < MAX_SAMPLES:
                    scrape.samples.append(sample)
            tick += 1
            self._stopping.wait(max(0.0, started + tick * SAMPLE_EVERY_S - time.monotonic()))

    def stop(self) -> tuple[dict[str, list[HostSample]], list[str]]:
        self._stopping.set()
        deadline = time.monotonic() + JOIN_S
        notes = []
        for scrape in self._scrapes:
            if scrape.thread is not None:
                scrape.thread.join(max(0.0, deadline - time.monotonic()))
            if scrape.failures:
                notes.append(
                    f"{scrape.exporter.name}: {scrape.failures} scrapes failed "
                    f"({len(scrape.samples)} succeeded); the first: {scrape.first_error}"
                )
        series = {s.exporter.name: list(s.samples) for s in self._scrapes}
        return series, notes

    def close(self) -> None:
        self.stop()


class ExperimentResources:
    """One experiment's samples: each agent's Progress.host (fed by `progress`) and the
    sources'; `finish` summarises them over the rated window and names the bottleneck."""

    def __init__(self, addresses: list[str], sources: list[ResourceSource]) -> None:
        self.streams = [f"{AGENT_STREAM}{a}" for a in addresses]
        self.series: dict[str, list[HostSample]] = {s: [] for s in self.streams}
        self.sources = sources
        self.notes: list[str] = []
        self._running: list[ResourceSource] = []

    def start(self, duration_s: float) -> None:
        for source in self.sources:
            try:
                source.start(duration_s)
            except SystemFault as exc:
                self.notes.append(f"a resource source did not start: {exc}")
            else:
                self._running.append(source)

    def progress(self, agent: int, progress: pb.Progress) -> None:
        """An agent's progress: its host sample, if it carries one (checked by AgentClient)."""
        if not progress.HasField("host"):
            return
        samples = self.series[self.streams[agent]]
        if len(samples) < MAX_SAMPLES:
            samples.append(HostSample.from_proto(progress.host))

    def stop(self) -> None:
        """Every source stopped (safe to call twice); their samples kept."""
        running, self._running = self._running, []
        for source in running:
            try:
                series, notes = source.stop()
            except Exception as exc:  # a watch never ends the experiment
                self.notes.append(f"a resource source failed to stop: {exc}")
                continue
            self.notes += notes
            for stream, samples in series.items():
                self.series.setdefault(stream, []).extend(samples[:MAX_SAMPLES])

    def finish(self, result: ExperimentResult, settings: Settings) -> ResourceFigures:
        """The figures over the result's rated window and the bottleneck they name."""
        self.stop()
        window = rated_window(result)
        hosts = summarise(self.series, window)
        embedded = any(a.embedded_store for a in result.agents)
        bottleneck = name_bottleneck(hosts, settings.resources.thresholds, embedded)
        full = [s for s, samples in self.series.items() if len(samples) >= MAX_SAMPLES]
        notes = self.notes + [f"{s}: samples beyond {MAX_SAMPLES} dropped" for s in full]
        return ResourceFigures(hosts, bottleneck, dict(self.series), window, notes)


def rated_window(result: ExperimentResult) -> tuple[float, float]:
    """The steady window's elapsed seconds (the whole run when it has none)."""
    end = max(result.elapsed_s, result.duration_s)
    steady = result.steady
    if steady is None:
        return (0.0, end)
    if steady.window_s > 0:
        return (steady.warmup_s, steady.warmup_s + steady.window_s)
    return (steady.warmup_s, end)
