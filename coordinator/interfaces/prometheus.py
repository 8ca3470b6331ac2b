"""--metrics-port: the live events as Prometheus metrics on 127.0.0.1:PORT/metrics.

A registry of its own (never prometheus-client's global one), updated by the events of
coordinator/records/events.py, served by prometheus-client's own HTTP server for the rating's
length and shut down after it. The hosts' figures and the bottleneck are
prometheus_hosts.py's.
"""

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from bgbench.coordinator.interfaces.prometheus_hosts import HostGauges
from bgbench.coordinator.records.events import (
    Event,
    ExperimentEnded,
    ExperimentStarted,
    ProgressTick,
    RatingEnded,
    RatingStarted,
)
from bgbench.errors import UserError

PHASES = ("warmup", "search", "final", "sweep", "run")


class MetricsSink:
    """Gauges and counters of what the rating is doing now."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.throughput = Gauge(
            "bgbench_throughput_actions_per_second",
            "Actions/s over all agents in the last progress interval",
            registry=r,
        )
        self.actions = Counter(
            "bgbench_actions", "Actions performed over all agents and experiments", registry=r
        )
        self.latency = Gauge(
            "bgbench_latency_seconds",
            "Response time quantiles of the last interval (merged HDR histograms)",
            ["quantile"],
            registry=r,
        )
        self.errors = Gauge(
            "bgbench_errors", "Failed actions in the running experiment so far", registry=r
        )
        self.unpredictable = Gauge(
            "bgbench_unpredictable_reads",
            "Unpredictable reads of the last validated experiment",
            registry=r,
        )
        self.unpredictable_ratio = Gauge(
            "bgbench_unpredictable_reads_ratio",
            "Share of reads that were unpredictable in the last validated experiment",
            registry=r,
        )
        self.agent_up = Gauge(
            "bgbench_agent_up", "1 when the agent reports progress, else 0", ["agent"], registry=r
        )
        self.threads = Gauge("bgbench_threads", "T of the current experiment", registry=r)
        self.phase = Gauge(
            "bgbench_experiment_phase",
            "1 for the phase of the current experiment, 0 for the others",
            ["phase"],
            registry=r,
        )
        self.experiments = Counter(
            "bgbench_experiments", "Experiments finished, by verdict", ["verdict"], registry=r
        )
        self.running = Gauge("bgbench_rating_running", "1 while a rating runs", registry=r)
        self.hosts = HostGauges(r)
        for q in ("0.5", "0.95", "0.99"):
            self.latency.labels(q)
        for p in PHASES:
            self.phase.labels(p)

    def emit(self, event: Event) -> None:
        if isinstance(event, ProgressTick):
            self.throughput.set(event.actions_per_s)
            self.actions.inc(max(0, event.new_actions))
            if event.latency_count:
                self.latency.labels("0.5").set(event.p50_ms / 1000)
                self.latency.labels("0.95").set(event.p95_ms / 1000)
                self.latency.labels("0.99").set(event.p99_ms / 1000)
            self.errors.set(event.errors)
            for a in event.agents:
                self.agent_up.labels(a.address).set(1 if a.state == "ok" else 0)
            self.hosts.update(event.agents)
        elif isinstance(event, ExperimentStarted):
            self.threads.set(event.threads)
            for p in PHASES:
                self.phase.labels(p).set(1 if p == event.phase else 0)
            self.errors.set(0)
        elif isinstance(event, ExperimentEnded):
            self.experiments.labels(event.verdict).inc()
            if event.verdict != "fault":
                self.unpredictable.set(event.unpredictable_reads)
                self.unpredictable_ratio.set(event.unpredictable_percent / 100)
            self.throughput.set(0)
            self.hosts.bottleneck(event)
        elif isinstance(event, RatingStarted):
            self.running.set(1)
        elif isinstance(event, RatingEnded):
            self.running.set(0)


class MetricsServer:
    """A MetricsSink served on 127.0.0.1:port until closed."""

    def __init__(self, port: int) -> None:
        self.sink = MetricsSink()
        try:
            server, thread = start_http_server(port, "127.0.0.1", self.sink.registry)
        except OSError as exc:
            raise UserError(
                f"--metrics-port {port}: cannot listen on 127.0.0.1:{port} ({exc.strerror}); "
                "choose a free port"
            ) from None
        except OverflowError:
            raise UserError(f"--metrics-port {port}: not a port; give 1 to 65535") from None
        self._server: WSGIServer = server
        self._thread: threading.Thread = thread
        self.port = port

    def emit(self, event: Event) -> None:
        self.sink.emit(event)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
