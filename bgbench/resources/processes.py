"""Process groups sampled on the progress tick: the agent's load processes, and the store's
processes on the agent's host (found by pid, name, container, or discovered from the load
processes' connections). A group's figures over the interval since its last sample:

- cpu_cores: Δ(user + system) / Δt summed over its processes (/proc/PID/stat);
- runqueue_cores: Δ run-queue wait / Δt (/proc/PID/schedstat, per thread when a process
  has several): what its threads would have run more on free cores;
- busiest_cores: the largest single process's (cpu + run-queue wait) per second;
- cores_allowed: the CPUs their affinity allows (the union over the group), capped by the
  CPU quotas of their cgroups (v2 cpu.max, v1 cfs quota; no cap when any has none);
- rss_bytes: resident memory summed.

Membership (and cores_allowed) is refreshed every REFRESH_S, not every tick: finding the
store walks every process and socket of the host. A process that vanishes is dropped; a
pid reused by another process (another start time) counts as a new process. A process
joining counts from its second sample on (its first primes its counters).
"""

import ipaddress
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

from bgbench.errors import UserError
from bgbench.protos import worker_pb2 as pb
from bgbench.resources import procfs
from bgbench.resources.model import GroupSample

REFRESH_S = 3.0
MAX_PROCESSES = 4096  # members of a group (beyond: not sampled)
MAX_CLIENTS = 1024  # load processes whose connections discovery reads
MAX_NAMES = 64
PID_MAX = 1 << 22  # the kernel's largest pid_max
CONTAINER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{2,127}")


@dataclass(frozen=True)
class StoreWatch:
    """Which processes on a host are the store's: these pids (and their descendants),
    processes of these names, a container's processes (its id or name in their cgroup),
    and unless `discover` is off, the local servers the load processes are connected to
    (and their descendants)."""

    pids: tuple[int, ...] = ()
    names: tuple[str, ...] = ()
    container: str = ""
    discover: bool = True

    def __post_init__(self) -> None:
        if len(self.pids) > MAX_PROCESSES or any(not 0 < p < PID_MAX for p in self.pids):
            raise UserError(f"store pids must be at most {MAX_PROCESSES} process ids")
        if len(self.names) > MAX_NAMES or any(
            not n or len(n) > 255 or "\n" in n or "\0" in n for n in self.names
        ):
            raise UserError(f"store process names must be at most {MAX_NAMES} names of one line")
        if self.container and not CONTAINER.fullmatch(self.container):
            raise UserError(
                f"store container {self.container[:40]!r} is not a container id or name "
                "(3 to 128 letters, digits, '_', '.', '-')"
            )

    def to_proto(self) -> pb.StoreWatch:
        return pb.StoreWatch(
            pids=list(self.pids),
            names=list(self.names),
            container=self.container,
            no_discovery=not self.discover,
        )

    @classmethod
    def from_proto(cls, msg: pb.StoreWatch) -> "StoreWatch":
        return cls(
            pids=tuple(msg.pids),
            names=tuple(msg.names),
            container=msg.container,
            discover=not msg.no_discovery,
        )


@dataclass
class _Tracked:
    start: int
    cpu_ticks: int
    waits: dict[int, int]  # thread id -> run-queue wait so far, ns
    rss_pages: int = 0  # when it joined


@dataclass
class _Members:
    pids: list[int] = field(default_factory=list)
    found_by: str = ""


class ProcessGroup:
    """Samples a set of processes; refreshes its membership itself (every REFRESH_S)."""

    def __init__(self, members: Callable[[], _Members], refresh_s: float = REFRESH_S) -> None:
        self._members = members
        self._refresh_s = refresh_s
        self._refreshed = -float("inf")
        self._tracked: dict[int, _Tracked] = {}
        self._found_by = ""
        self._allowed = 0.0
        self._at = time.monotonic()

    @classmethod
    def of_pids(cls, pids: Callable[[], list[int]]) -> "ProcessGroup":
        """The processes `pids()` names (the agent's load processes)."""
        return cls(lambda: _Members(list(pids())))

    @classmethod
    def store(cls, watch: StoreWatch, clients: Callable[[], list[int]]) -> "ProcessGroup":
        """The store's processes as `watch` says, `clients()` being the load processes."""
        return cls(StoreFinder(watch, clients).find)

    @property
    def pids(self) -> list[int]:
        """The processes sampled now (as of the last refresh, less those gone since)."""
        return list(self._tracked)

    def sample(self) -> GroupSample | None:
        """The group over the interval since the last sample; None: no process (yet)."""
        joined: set[int] = set()
        if time.monotonic() - self._refreshed >= self._refresh_s:
            joined = self._refresh()
        now = time.monotonic()
        dt, self._at = now - self._at, now
        cpu = wait = busiest = 0.0
        rss = 0
        for pid, was in list(self._tracked.items()):
            if pid in joined:  # primed just now: counted from the next sample on
                rss += was.rss_pages
                continue
            stat = procfs.parse_stat(procfs.read(f"/proc/{pid}/stat") or "")
            if stat is None or stat.start != was.start or stat.state == "Z":
                del self._tracked[pid]  # gone (or its pid taken by another process)
                continue
            waits = procfs.run_queue_waits(pid, stat.threads)
            used = max(0, stat.cpu_ticks - was.cpu_ticks) / procfs.CLOCK_TICKS
            waited = sum(max(0, w - was.waits[t]) for t, w in waits.items() if t in was.waits)
            cpu, wait, rss = cpu + used, wait + waited / 1e9, rss + stat.rss_pages
            busiest = max(busiest, used + waited / 1e9)
            was.cpu_ticks, was.waits = stat.cpu_ticks, waits
        if not self._tracked:
            return None
        per_s = 1.0 / dt if dt > 0 else 0.0
        return GroupSample(
            cpu_cores=cpu * per_s,
            cores_allowed=self._allowed,
            busiest_cores=busiest * per_s,
            rss_bytes=rss * procfs.PAGE_BYTES,
            processes=len(self._tracked),
            found_by=self._found_by,
            runqueue_cores=wait * per_s,
        )

    def _refresh(self) -> set[int]:
        """Membership again; the pids that joined (primed, not yet sampled)."""
        members = self._members()
        self._refreshed = time.monotonic()
        pids = list(dict.fromkeys(members.pids))[:MAX_PROCESSES]
        self._found_by = members.found_by
        keep = set(pids)
        self._tracked = {p: t for p, t in self._tracked.items() if p in keep}
        joined = set()
        for pid in pids:
            if pid not in self._tracked:
                stat = procfs.parse_stat(procfs.read(f"/proc/{pid}/stat") or "")
                if stat is not None and stat.state != "Z":
                    waits = procfs.run_queue_waits(pid, stat.threads)
                    self._tracked[pid] = _Tracked(stat.start, stat.cpu_ticks, waits, stat.rss_pages)
                    joined.add(pid)
        self._allowed = cores_allowed(list(self._tracked))
        return joined


def cores_allowed(pids: list[int]) -> float:
    """The CPUs the processes may run on together (their affinities' union), capped by
    their cgroups' CPU quotas summed (no cap if any process's cgroup has none)."""
    cpus: set[int] = set()
    quotas: dict[str, float] = {}
    capped = bool(pids)
    for pid in pids:
        try:
            cpus |= os.sched_getaffinity(pid)
        except OSError:
            continue
        quota = procfs.cgroup_quota(pid)
        if quota is None:
            capped = False
        else:
            quotas[procfs.read(f"/proc/{pid}/cgroup") or str(pid)] = quota
    allowed = float(len(cpus))
    return min(allowed, sum(quotas.values())) if capped and quotas else allowed


class StoreFinder:
    """Finds the store's processes as a StoreWatch says; the agent's own process, the load
    processes and the agent's ancestors (a harness that started it) are never the store's."""

    def __init__(self, watch: StoreWatch, clients: Callable[[], list[int]]) -> None:
        self.watch = watch
        self.clients = clients
        self._listeners: dict[int, int] = {}  # port -> the pid that listens on it
        me = psutil.Process()
        self._never = {me.pid, *(p.pid for p in me.parents())}

    def find(self) -> _Members:
        found: dict[int, None] = {}
        how: list[str] = []
        clients = list(self.clients())[:MAX_CLIENTS]
        never = self._never | set(clients)

        def add(pids: list[int], reason: str) -> None:
            fresh = [p for p in pids if p not in never]
            if fresh:
                found.update(dict.fromkeys(fresh))
                how.append(reason)

        for pid in self.watch.pids:
            add(with_descendants([pid]), f"pid {pid}")
        if self.watch.names:
            named = _by_name(set(self.watch.names))
            for name in self.watch.names:
                add(named.get(name, []), f"name {name}")
        if self.watch.container:
            add(_in_container(self.watch.container), f"container {self.watch.container}")
        if self.watch.discover:
            for port, pid in sorted(self._servers_of(clients).items()):
                if pid not in never:
                    add(with_descendants([pid]), f"port {port}")
        return _Members(list(found)[:MAX_PROCESSES], ", ".join(how))

    def _servers_of(self, clients: list[int]) -> dict[int, int]:
        """port -> listening pid, for the local TCP servers the clients are connected to."""
        ports = set()
        local = _local_addresses()
        for pid in clients:
            try:
                conns = psutil.Process(pid).net_connections(kind="tcp")
            except (psutil.Error, OSError):
                continue
            for c in conns:
                if c.status == psutil.CONN_ESTABLISHED and c.raddr and _is_local(c.raddr.ip, local):
                    ports.add(c.raddr.port)
        known = {p: pid for p, pid in self._listeners.items() if p in ports and _alive(pid)}
        if ports - set(known):
            known.update(_listeners(ports - set(known)))
        self._listeners = known
        return known


def with_descendants(pids: list[int]) -> list[int]:
    """The processes and every descendant of theirs that runs."""
    out: list[int] = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            out += [pid, *(c.pid for c in proc.children(recursive=True))]
        except (psutil.Error, OSError):
            continue
    return out


def _by_name(names: set[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for proc in psutil.process_iter(["name"]):
        name = proc.info.get("name")
        if name in names:
            out.setdefault(name, []).append(proc.pid)
    return out


def _in_container(needle: str) -> list[int]:
    return [pid for pid in psutil.pids() if procfs.cgroup_names(pid, needle)]


def _local_addresses() -> set[str]:
    try:
        addrs = psutil.net_if_addrs()
    except OSError:
        return set()
    return {a.address.split("%")[0] for nic in addrs.values() for a in nic}


def _is_local(ip: str, local: set[str]) -> bool:
    if ip in local:
        return True
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        return bool(mapped.is_loopback) or str(mapped) in local
    return address.is_loopback


def _listeners(ports: set[int]) -> dict[int, int]:
    """port -> the pid listening on it (the host's TCP sockets, read once)."""
    out: dict[int, int] = {}
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return out
    for c in conns:
        if c.status == psutil.CONN_LISTEN and c.pid and c.laddr and c.laddr.port in ports:
            out.setdefault(c.laddr.port, c.pid)
    return out


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).is_running()
    except (psutil.Error, OSError):
        return False
