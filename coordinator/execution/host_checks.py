"""An agent's samples of its host are untrusted input too (agent_checks.py says why): every
list bounded, every figure finite, non-negative and of a size a host can have, before the
coordinator sums them or names a bottleneck from them."""

import math

from bgbench.coordinator.execution.agent_checks import (
    MAX_CORES,
    MAX_MEMORY_BYTES,
    MAX_SECONDS,
    AgentFault,
)
from bgbench.protos import worker_pb2 as pb

MAX_SAMPLED_CORES = 4096  # the agent's sampler reads no more
MAX_SHARE = 2.0  # a busy share is 0..1; beyond this slack for a clock's jitter, it is wrong
MAX_BYTES_PER_S = 1e15  # a petabyte a second: beyond any disk or network
MAX_PROCESSES = 1 << 22  # Linux's pid_max
MAX_NAME_CHARS = 512  # host ids, host and disk names, how a store was found

_HOST_RATES = (
    "disk_read_bytes_per_s",
    "disk_write_bytes_per_s",
    "net_rx_bytes_per_s",
    "net_tx_bytes_per_s",
    "net_capacity_bytes_per_s",
    "net_link_bytes_per_s",
)
_GROUP_CORES = ("cpu_cores", "cores_allowed", "busiest_cores", "runqueue_cores")


def check_host_sample(address: str, sample: pb.HostSample, field: str = "host sample") -> None:
    for name in ("host_id", "host", "source", "busiest_disk"):
        _text(address, f"{field} {name}", getattr(sample, name))
    for name in ("elapsed_seconds", "interval_seconds"):
        _number(address, f"{field} {name}", getattr(sample, name), MAX_SECONDS)
    if len(sample.cpu_per_core) > MAX_SAMPLED_CORES:
        cores = len(sample.cpu_per_core)
        raise AgentFault(address, f"{field} cpu_per_core", f"{cores} cores, more than 4096")
    for share in sample.cpu_per_core:
        _number(address, f"{field} cpu_per_core", share, MAX_SHARE)
    _number(address, f"{field} disk_busy", sample.disk_busy, MAX_SHARE)
    for name in ("memory_used_bytes", "memory_total_bytes"):
        _number(address, f"{field} {name}", getattr(sample, name), MAX_MEMORY_BYTES)
    for name in _HOST_RATES:
        _number(address, f"{field} {name}", getattr(sample, name), MAX_BYTES_PER_S)
    for group in ("load", "store"):
        if sample.HasField(group):
            _check_group(address, getattr(sample, group), f"{field} {group}")


def _check_group(address: str, group: pb.GroupSample, field: str) -> None:
    for name in _GROUP_CORES:
        _number(address, f"{field} {name}", getattr(group, name), 2.0 * MAX_CORES)
    _number(address, f"{field} rss_bytes", group.rss_bytes, MAX_MEMORY_BYTES)
    _number(address, f"{field} processes", group.processes, MAX_PROCESSES)
    _text(address, f"{field} found_by", group.found_by)


def _number(address: str, field: str, value: float, highest: float) -> None:
    if not (math.isfinite(value) and 0 <= value <= highest):
        raise AgentFault(address, field, f"{value!r}, not a finite number from 0 to {highest:g}")


def _text(address: str, field: str, value: str) -> None:
    if len(value) > MAX_NAME_CHARS:
        raise AgentFault(address, field, f"{len(value)} characters, more than {MAX_NAME_CHARS}")
