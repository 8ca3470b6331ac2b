"""--metrics-port: the agents' hosts as their latest progress sampled them (labelled by
host), and what bound the last experiment.

Several agents on one host report the same host: its figures are taken from one of them,
its load processes' cores summed over them. Label values come from the agents (the
network): prometheus-client escapes them in its text format; at most MAX_HOSTS hosts get
series, so a host name cannot grow the registry without bound.
"""

from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Gauge

from bgbench.coordinator.records.events import AgentHealth, ExperimentEnded, HostLoad

MAX_HOSTS = 64  # hosts with series; those beyond are left out


class HostGauges:
    def __init__(self, r: CollectorRegistry) -> None:
        def gauge(name: str, text: str, *labels: str) -> Gauge:
            return Gauge(name, text, list(labels), registry=r)

        self.cpu = gauge("bgbench_host_cpu_busy_cores", "Busy cores of the host", "host")
        self.cores = gauge("bgbench_host_cores", "Cores of the host", "host")
        self.store = gauge(
            "bgbench_store_cpu_cores", "Cores the store's processes on the host use", "host"
        )
        self.load = gauge(
            "bgbench_load_cpu_cores", "Cores the load processes on the host use", "host"
        )
        self.memory = gauge("bgbench_host_memory_used_bytes", "Memory in use on the host", "host")
        self.disk = gauge(
            "bgbench_host_disk_busy_ratio", "Busy share of the host's busiest disk", "host"
        )
        self.disk_bytes = gauge(
            "bgbench_host_disk_bytes_per_second", "Disk bytes/s of the host", "host", "direction"
        )
        self.network = gauge(
            "bgbench_host_network_bytes_per_second",
            "Network bytes/s of the host (every interface)",
            "host",
            "direction",
        )
        self.bound = gauge(
            "bgbench_bottleneck_utilisation_ratio",
            "What bound the last experiment (its labels) and its share of capacity",
            "kind",
            "host",
            "text",
        )
        self.client_bound = gauge(
            "bgbench_client_bound", "1 when the client bound the last experiment"
        )
        self.known: set[str] = set()

    def update(self, agents: Sequence[AgentHealth]) -> None:
        by_host: dict[str, list[HostLoad]] = {}
        for a in agents:
            if a.host is not None:
                by_host.setdefault(a.host.host_id, []).append(a.host)
        for samples in by_host.values():
            h = samples[0]
            if h.host not in self.known and len(self.known) >= MAX_HOSTS:
                continue
            self.known.add(h.host)
            self.cpu.labels(h.host).set(h.cpu_cores)
            self.cores.labels(h.host).set(h.cores)
            self.memory.labels(h.host).set(h.memory_used_bytes)
            self.disk.labels(h.host).set(h.disk_busy)
            self.disk_bytes.labels(h.host, "read").set(h.disk_read_bytes_per_s)
            self.disk_bytes.labels(h.host, "write").set(h.disk_write_bytes_per_s)
            self.network.labels(h.host, "rx").set(h.net_rx_bytes_per_s)
            self.network.labels(h.host, "tx").set(h.net_tx_bytes_per_s)
            loads = [s.load_cpu_cores for s in samples if s.load_cpu_cores is not None]
            if loads:
                self.load.labels(h.host).set(sum(loads))
            stores = [s.store_cpu_cores for s in samples if s.store_cpu_cores is not None]
            if stores:
                self.store.labels(h.host).set(stores[0])

    def bottleneck(self, event: ExperimentEnded) -> None:
        """The last experiment's bottleneck: one series, its labels saying what."""
        if not event.bottleneck_kind:
            return
        self.bound.clear()
        self.bound.labels(event.bottleneck_kind, event.bottleneck_host, event.bottleneck).set(
            event.bottleneck_utilisation
        )
        self.client_bound.set(1 if event.client_bound else 0)
