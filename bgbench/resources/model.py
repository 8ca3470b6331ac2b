"""The resource types every layer shares: a sample of a host (and of process groups on
it) over one interval, a host's figures over an experiment's window, the bottleneck named
from them, and all of it as an experiment keeps it (`ResourceFigures`, JSON in the results
store). Their wire form is protos/worker.proto's GroupSample and HostSample."""

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from bgbench.protos import worker_pb2 as pb


@dataclass
class GroupSample:
    """A set of processes over one interval: the agent's load processes, or the store's."""

    cpu_cores: float = 0.0  # CPU-seconds per second, all of them together
    cores_allowed: float = 0.0  # their CPU affinity, capped by a cgroup quota
    # the busiest single process's demand: its CPU plus its threads' run-queue wait
    busiest_cores: float = 0.0
    rss_bytes: int = 0
    processes: int = 0
    found_by: str = ""  # how the store's were found: "port 5432", "name postgres", "pid 41"
    # seconds per second their threads were runnable but waited for a CPU (schedstat): with
    # cpu_cores, what they would have used on free cores (their demand)
    runqueue_cores: float = 0.0

    @property
    def demand_cores(self) -> float:
        return self.cpu_cores + self.runqueue_cores

    def to_proto(self) -> pb.GroupSample:
        return pb.GroupSample(**asdict(self))

    @classmethod
    def from_proto(cls, msg: pb.GroupSample) -> "GroupSample":
        return cls(**{f.name: getattr(msg, f.name) for f in fields(cls)})


@dataclass
class HostSample:
    """One host over one interval; rates are over the interval."""

    host_id: str  # merges the reports of one host: its boot id, or the endpoint scraped
    host: str  # what a person calls it: the hostname, or the endpoint
    source: str  # "agent", "node_exporter" or "monitor"
    elapsed_s: float = 0.0  # since the run began, on the sampler's clock
    interval_s: float = 0.0
    cpu_per_core: list[float] = field(default_factory=list)  # busy share of each core, 0..1
    memory_used_bytes: int = 0
    memory_total_bytes: int = 0
    disk_read_bytes_per_s: float = 0.0
    disk_write_bytes_per_s: float = 0.0
    disk_busy: float = 0.0  # the busiest disk's busy share, 0..1
    busiest_disk: str = ""
    net_rx_bytes_per_s: float = 0.0
    net_tx_bytes_per_s: float = 0.0
    net_capacity_bytes_per_s: float = 0.0  # the links' speed; 0: unknown (loopback)
    # the busier direction through the links whose speed is known (no loopback): what the
    # capacity bounds
    net_link_bytes_per_s: float = 0.0
    load: GroupSample | None = None  # the agent's load processes (None: none on this host)
    store: GroupSample | None = None  # the store's processes on this host (None: not found)

    @property
    def cores(self) -> int:
        return len(self.cpu_per_core)

    @property
    def cpu_cores(self) -> float:
        """Busy cores, the host's whole CPU."""
        return float(sum(self.cpu_per_core))

    def to_proto(self) -> pb.HostSample:
        msg = pb.HostSample(
            host_id=self.host_id,
            host=self.host,
            source=self.source,
            elapsed_seconds=self.elapsed_s,
            interval_seconds=self.interval_s,
            cpu_per_core=self.cpu_per_core,
            **{name: getattr(self, name) for name in _SAME_NAMED},
        )
        if self.load is not None:
            msg.load.CopyFrom(self.load.to_proto())
        if self.store is not None:
            msg.store.CopyFrom(self.store.to_proto())
        return msg

    @classmethod
    def from_proto(cls, msg: pb.HostSample) -> "HostSample":
        return cls(
            host_id=msg.host_id,
            host=msg.host,
            source=msg.source,
            elapsed_s=msg.elapsed_seconds,
            interval_s=msg.interval_seconds,
            cpu_per_core=list(msg.cpu_per_core),
            load=GroupSample.from_proto(msg.load) if msg.HasField("load") else None,
            store=GroupSample.from_proto(msg.store) if msg.HasField("store") else None,
            **{name: getattr(msg, name) for name in _SAME_NAMED},
        )

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "HostSample":
        groups = {
            k: None if data.get(k) is None else GroupSample(**_known(GroupSample, data[k]))
            for k in ("load", "store")
        }
        return cls(**{**_known(cls, data), **groups})


_SAME_NAMED = (
    "memory_used_bytes",
    "memory_total_bytes",
    "disk_read_bytes_per_s",
    "disk_write_bytes_per_s",
    "disk_busy",
    "busiest_disk",
    "net_rx_bytes_per_s",
    "net_tx_bytes_per_s",
    "net_capacity_bytes_per_s",
    "net_link_bytes_per_s",
)


@dataclass
class HostFigures:
    """One host over an experiment's rated window: means of its samples (memory: the
    peak). The load's figures add up every agent's load processes on the host; the
    store's are its processes as any one watcher of the host saw them."""

    host_id: str
    host: str
    source: str
    samples: int = 0
    cores: int = 0
    cpu_cores: float = 0.0  # busy cores, the whole host
    cpu_per_core: list[float] = field(default_factory=list)
    memory_used_bytes: int = 0
    memory_total_bytes: int = 0
    disk_read_bytes_per_s: float = 0.0
    disk_write_bytes_per_s: float = 0.0
    disk_busy: float = 0.0
    busiest_disk: str = ""
    net_rx_bytes_per_s: float = 0.0
    net_tx_bytes_per_s: float = 0.0
    net_capacity_bytes_per_s: float = 0.0
    net_link_bytes_per_s: float = 0.0
    load_cpu_cores: float = 0.0
    load_cores_allowed: float = 0.0
    load_runqueue_cores: float = 0.0  # run-queue wait per second (GroupSample)
    load_busiest_cores: float = 0.0  # the busiest single load process's demand
    load_processes: int = 0
    store_cpu_cores: float = 0.0
    store_cores_allowed: float = 0.0
    store_runqueue_cores: float = 0.0
    store_busiest_cores: float = 0.0
    store_rss_bytes: int = 0
    store_processes: int = 0
    store_found_by: str = ""  # "" : no store process watched on this host

    @property
    def watches_store(self) -> bool:
        return bool(self.store_found_by) or self.source in ("node_exporter", "monitor")


@dataclass
class Bottleneck:
    """What bound an experiment, named from its hosts' figures (bottleneck.py)."""

    # "server_cpu", "server_disk", "network", "client", "setup" (other processes on a
    # saturated host), "none" or "unmeasured"
    kind: str = "unmeasured"
    resource: str = ""  # "server CPU", "disk nvme0n1", "load processes' CPU", ...
    host: str = ""
    used: float = 0.0  # in the resource's unit: cores, busy share, bytes/s
    capacity: float = 0.0
    utilisation: float = 0.0  # used / capacity
    text: str = "resources not measured"  # the line a person reads
    client_bound: bool = False  # the client, not the store, set the limit
    others: list[str] = field(default_factory=list)  # other resources at or near saturation


@dataclass
class ResourceFigures:
    """What an experiment keeps of its resources (ExperimentResult.resources)."""

    hosts: list[HostFigures] = field(default_factory=list)
    bottleneck: Bottleneck = field(default_factory=Bottleneck)
    # Every sample, by stream ("agent 127.0.0.1:50051", "node_exporter 10.0.0.5:9100").
    series: dict[str, list[HostSample]] = field(default_factory=dict)
    window_s: tuple[float, float] = (0.0, 0.0)  # the rated window the figures are over
    notes: list[str] = field(default_factory=list)  # e.g. scrapes that failed

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "ResourceFigures":
        return cls(
            hosts=[HostFigures(**_known(HostFigures, h)) for h in data.get("hosts", [])],
            bottleneck=Bottleneck(**_known(Bottleneck, data.get("bottleneck", {}))),
            series={
                k: [HostSample.from_record(s) for s in v] for k, v in data.get("series", {}).items()
            },
            window_s=tuple(data.get("window_s", (0.0, 0.0))),
            notes=list(data.get("notes", [])),
        )


def _known(cls: Any, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}
