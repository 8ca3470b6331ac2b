"""Series of host samples -> each host's figures over an experiment's rated window.

A stream is one sampler's series ("agent 127.0.0.1:50051", "node_exporter 10.0.0.5:9100").
Streams of one host (several agents on it, or an agent and a monitor) share a host_id and
become one HostFigures: the host's own figures (CPU, memory, disk, network) come from one
stream (the one with the most samples in the window), the load processes' figures add up
every stream's (each agent watches its own load processes), and the store's come from one
stream (they all watch the same processes).

Samples are untrusted (an agent's, a scrape's): figures that are not finite or are
negative count as 0, shares are clamped to [0, 1], and a sample lists at most MAX_CORES
cores. A sample with no interval (a sampler's first, which primes its counters) says
nothing and is left out. A stream with no sample inside the window (a run too short for
its warm-up cut) is summarised over all its samples rather than dropped.
"""

import math
from collections import Counter
from collections.abc import Iterable

from bgbench.resources.model import GroupSample, HostFigures, HostSample

MAX_CORES = 4096  # cores of one host a sample may list; the rest are ignored


def summarise(
    series: dict[str, list[HostSample]], window: tuple[float, float]
) -> list[HostFigures]:
    """Each host's figures over `window` (elapsed seconds, ends included), in the order
    their streams are named."""
    by_host: dict[str, list[tuple[str, list[HostSample]]]] = {}
    for stream in sorted(series):
        samples = _in_window([s for s in series[stream] if _real(s)], window)
        if samples:
            by_host.setdefault(samples[0].host_id, []).append((stream, samples))
    return [_host(streams) for streams in by_host.values()]


def _real(sample: HostSample) -> bool:
    return _finite(sample.interval_s) > 0 and math.isfinite(sample.elapsed_s)


def _in_window(samples: list[HostSample], window: tuple[float, float]) -> list[HostSample]:
    low, high = window
    inside = [s for s in samples if low <= s.elapsed_s <= high]
    return inside or samples


def _host(streams: list[tuple[str, list[HostSample]]]) -> HostFigures:
    """One host from its streams (at least one, each with at least one sample)."""
    _, main = max(streams, key=lambda named: len(named[1]))  # first of the longest
    first = main[0]
    cores = Counter(min(len(s.cpu_per_core), MAX_CORES) for s in main).most_common(1)[0][0]
    per_core = [
        _mean(_share(s.cpu_per_core[i]) for s in main if len(s.cpu_per_core) > i)
        for i in range(cores)
    ]
    disks = Counter(s.busiest_disk for s in main if s.busiest_disk)
    figures = HostFigures(
        host_id=first.host_id,
        host=first.host,
        source=first.source,
        samples=len(main),
        cores=cores,
        cpu_cores=sum(per_core),
        cpu_per_core=per_core,
        memory_used_bytes=int(max(_finite(s.memory_used_bytes) for s in main)),
        memory_total_bytes=int(max(_finite(s.memory_total_bytes) for s in main)),
        disk_read_bytes_per_s=_mean(_finite(s.disk_read_bytes_per_s) for s in main),
        disk_write_bytes_per_s=_mean(_finite(s.disk_write_bytes_per_s) for s in main),
        disk_busy=_mean(_share(s.disk_busy) for s in main),
        busiest_disk=disks.most_common(1)[0][0][:200] if disks else "",
        net_rx_bytes_per_s=_mean(_finite(s.net_rx_bytes_per_s) for s in main),
        net_tx_bytes_per_s=_mean(_finite(s.net_tx_bytes_per_s) for s in main),
        net_capacity_bytes_per_s=max(_finite(s.net_capacity_bytes_per_s) for s in main),
        net_link_bytes_per_s=_mean(_finite(s.net_link_bytes_per_s) for s in main),
    )
    _add_load(figures, [samples for _, samples in streams])
    _add_store(figures, [samples for _, samples in streams])
    return figures


def _add_load(figures: HostFigures, streams: list[list[HostSample]]) -> None:
    """Every stream's load processes, added up (each agent watches its own); their cores
    allowed at most the host's."""
    for samples in streams:
        groups = [s.load for s in samples if s.load is not None]
        if not groups:
            continue
        mean = _mean_group(groups)
        figures.load_cpu_cores += mean.cpu_cores
        figures.load_runqueue_cores += mean.runqueue_cores
        figures.load_cores_allowed += mean.cores_allowed
        figures.load_busiest_cores = max(figures.load_busiest_cores, mean.busiest_cores)
        figures.load_processes += mean.processes
    if figures.cores:
        figures.load_cores_allowed = min(figures.load_cores_allowed, float(figures.cores))


def _add_store(figures: HostFigures, streams: list[list[HostSample]]) -> None:
    """The store's processes as the stream that saw them most often saw them."""
    watched = [[s.store for s in samples if s.store is not None] for samples in streams]
    groups = max(watched, key=len)
    if not groups:
        return
    mean = _mean_group(groups)
    figures.store_cpu_cores = mean.cpu_cores
    figures.store_runqueue_cores = mean.runqueue_cores
    figures.store_cores_allowed = mean.cores_allowed
    figures.store_busiest_cores = mean.busiest_cores
    figures.store_rss_bytes = max(int(_finite(g.rss_bytes)) for g in groups)
    figures.store_processes = mean.processes
    found = Counter(g.found_by for g in groups if g.found_by).most_common(1)
    figures.store_found_by = found[0][0][:200] if found else "watched"


def _mean_group(groups: list[GroupSample]) -> GroupSample:
    """The mean of a group's samples (processes: the most seen at once)."""
    return GroupSample(
        cpu_cores=_mean(_finite(g.cpu_cores) for g in groups),
        cores_allowed=_mean(_finite(g.cores_allowed) for g in groups),
        busiest_cores=_mean(_finite(g.busiest_cores) for g in groups),
        runqueue_cores=_mean(_finite(g.runqueue_cores) for g in groups),
        processes=int(max(_finite(g.processes) for g in groups)),
    )


def _finite(value: float) -> float:
    """A figure as a number of something: not finite or negative counts as 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) and number > 0 else 0.0


def _share(value: float) -> float:
    return min(1.0, _finite(value))


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return math.fsum(items) / len(items) if items else 0.0
