"""A host sampled with psutil on the progress tick: CPU per core, memory, disk and network,
as rates over the interval since the previous sample (the first call, at construction,
primes the counters). Linux figures; the counters are the kernel's, so a sample costs a
few reads of /proc and no process of its own.

- CPU: a core's busy share is 1 - (idle + iowait) / all of its time (steal counts as busy:
  the core was not there for this host's work; guest time is inside user time already).
- Memory: used = total - available (what the kernel could not give a new program).
- Disk: the whole block devices that are real disks (/sys/block/NAME/device exists: not
  loop, ram, zram or device-mapper, whose bytes are a disk's counted again); bytes read
  and written per second summed, busy share the busiest disk's Δ busy_time / Δt.
- Network: bytes received and sent per second over every interface, loopback included
  (a store on the agent's host is reached through it); capacity the links' speed
  (net_if_stats, Mb/s -> bytes/s), 0 when no link says (loopback, most virtual NICs).
"""

import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from bgbench.resources.model import GroupSample, HostSample

MAX_CORES = 4096
MAX_DISKS = 256
LINKS_EVERY_S = 10.0  # link speeds and the list of disks change rarely: read them this often


def host_identity() -> tuple[str, str]:
    """(host_id, hostname): the boot id with the hostname, so every agent on one host
    (and a monitor agent there) reports the same host, and a reboot makes it a new one."""
    name = socket.gethostname()
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:64]
    except OSError:
        boot = ""
    return (f"{boot} {name}" if boot else name), name


def busy_shares(before: list[Any], after: list[Any]) -> list[float]:
    """Each core's busy share between two psutil.cpu_times(percpu=True) readings."""
    shares = []
    for b, a in zip(before[:MAX_CORES], after[:MAX_CORES], strict=False):
        total = _total(a) - _total(b)
        idle = _idle(a) - _idle(b)
        shares.append(0.0 if total <= 0 else min(1.0, max(0.0, 1.0 - idle / total)))
    return shares


def _total(t: Any) -> float:
    # guest and guest_nice are already inside user and nice (Linux), as psutil counts them
    return float(sum(t)) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)


def _idle(t: Any) -> float:
    return float(t.idle) + getattr(t, "iowait", 0.0)


def real_disks(block: Path = Path("/sys/block")) -> set[str] | None:
    """The whole block devices backed by a device (not loop, ram, zram, dm-); None when
    /sys/block cannot be read (then every disk psutil names is taken)."""
    try:
        names = sorted(os.listdir(block))[:MAX_DISKS]
    except OSError:
        return None
    return {n for n in names if (block / n / "device").exists() and not n.startswith("zram")}


def link_capacity(stats: Mapping[str, Any]) -> float:
    """The summed speed of the links that are up and say their speed, bytes/s."""
    mbps = sum(s.speed for s in stats.values() if s.isup and s.speed > 0)
    return float(mbps) * 1e6 / 8


def speed_known(stats: Mapping[str, Any]) -> frozenset[str]:
    """The links that are up and say their speed (never loopback: it says none)."""
    return frozenset(name for name, s in stats.items() if s.isup and s.speed > 0)


NetCounters = tuple[int, int, int, int]  # received, sent; and through the known links


class HostSampler:
    """Samples this host; each sample() gives the rates since the previous one."""

    def __init__(self, source: str = "agent") -> None:
        self.source = source
        self.host_id, self.host = host_identity()
        self._links_at = -LINKS_EVERY_S
        self._disks: set[str] | None = None
        self._capacity = 0.0
        self._links: frozenset[str] = frozenset()
        self._refresh_rarely(time.monotonic())
        self._at = time.monotonic()
        self._cpu = psutil.cpu_times(percpu=True)
        self._disk = self._disk_counters()
        self._net = self._net_counters()

    def sample(
        self, elapsed_s: float, load: GroupSample | None = None, store: GroupSample | None = None
    ) -> HostSample:
        now = time.monotonic()
        self._refresh_rarely(now)
        cpu, disk, net = psutil.cpu_times(percpu=True), self._disk_counters(), self._net_counters()
        memory = psutil.virtual_memory()
        dt = now - self._at
        rate = (lambda d: max(0.0, d) / dt) if dt > 0 else (lambda d: 0.0)
        busiest, busy = "", 0.0
        for name, (_, _, busy_ms) in disk.items():
            if name in self._disk:
                share = min(1.0, rate((busy_ms - self._disk[name][2]) / 1000.0))
                if share > busy or not busiest:
                    busiest, busy = name, share
        sample = HostSample(
            host_id=self.host_id,
            host=self.host,
            source=self.source,
            elapsed_s=elapsed_s,
            interval_s=dt,
            cpu_per_core=busy_shares(self._cpu, cpu),
            memory_used_bytes=int(memory.total - memory.available),
            memory_total_bytes=int(memory.total),
            disk_read_bytes_per_s=rate(_moved(self._disk, disk, 0)),
            disk_write_bytes_per_s=rate(_moved(self._disk, disk, 1)),
            disk_busy=busy,
            busiest_disk=busiest,
            net_rx_bytes_per_s=rate(net[0] - self._net[0]),
            net_tx_bytes_per_s=rate(net[1] - self._net[1]),
            net_capacity_bytes_per_s=self._capacity,
            net_link_bytes_per_s=max(rate(net[2] - self._net[2]), rate(net[3] - self._net[3])),
            load=load,
            store=store,
        )
        self._at, self._cpu, self._disk, self._net = now, cpu, disk, net
        return sample

    def _refresh_rarely(self, now: float) -> None:
        if now - self._links_at < LINKS_EVERY_S:
            return
        self._links_at = now
        self._disks = real_disks()
        try:
            stats = psutil.net_if_stats()
        except OSError:
            stats = {}
        self._capacity, links = link_capacity(stats), speed_known(stats)
        if links != self._links:  # the link counters restart from the new set's
            self._links = links
            self._net = self._net_counters()

    def _disk_counters(self) -> dict[str, tuple[int, int, int]]:
        """name -> (read bytes, written bytes, busy ms) of the real disks."""
        try:
            counters = psutil.disk_io_counters(perdisk=True, nowrap=True) or {}
        except (OSError, RuntimeError):  # no /proc/diskstats (some containers)
            return {}
        keep = self._disks
        return {
            name: (c.read_bytes, c.write_bytes, getattr(c, "busy_time", 0))
            for name, c in list(counters.items())[:MAX_DISKS]
            if keep is None or name in keep
        }

    def _net_counters(self) -> NetCounters:
        try:
            nics = psutil.net_io_counters(pernic=True, nowrap=True) or {}
        except OSError:
            return 0, 0, 0, 0
        links = [c for name, c in nics.items() if name in self._links]
        return (
            sum(c.bytes_recv for c in nics.values()),
            sum(c.bytes_sent for c in nics.values()),
            sum(c.bytes_recv for c in links),
            sum(c.bytes_sent for c in links),
        )


def _moved(
    before: dict[str, tuple[int, int, int]], after: dict[str, tuple[int, int, int]], index: int
) -> int:
    """One counter's growth summed over the disks in both readings (a disk that came or
    went between two samples is left out)."""
    return sum(v[index] - before[k][index] for k, v in after.items() if k in before)
