"""Process groups sampled on the progress tick: the agent's load processes, and the store's
processes on the agent's host (found by pid, name, container, or discovered from the load
processes' connections). A group's figures over the interval since its last sample:

- cpu_cores: Δ CPU time / Δt summed over its processes: a process with one thread (most
  servers' processes: PostgreSQL's backends) from /proc/PID/schedstat alone, its time on a
  CPU in ns; one with threads from /proc/PID/stat's user + system ticks;
- runqueue_cores: Δ run-queue wait / Δt (schedstat, per thread when a process has
  several): what its threads would have run more on free cores;
- busiest_cores: the largest single process's (cpu + run-queue wait) per second;
- cores_allowed: the CPUs their affinity allows (the union over the group), capped by the
  CPU quotas of their cgroups (v2 cpu.max, v1 cfs quota; no cap when any has none);
- rss_bytes: resident memory summed, as of the last refresh.

Membership, cores_allowed and RSS are refreshed every REFRESH_S, not every tick (a tick
reads one file per single-threaded process): finding the store reads the host's sockets
and the processes' trees. A process that vanishes is dropped at once, a zombie at the
next refresh; a pid reused by another process (another start time) counts as a new
process from the refresh that sees it. A process joining counts from its second sample on
(its first primes its counters).
"""

import os
import re
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

from bgbench.errors import UserError
from bgbench.protos import worker_pb2 as pb
from bgbench.resources import discovery, procfs
from bgbench.resources.model import GroupSample

REFRESH_S = 3.0
MAX_PROCESSES = 4096  # members of a group (beyond: not sampled)
# schedstat files a group keeps open (beyond: opened on each read): at most a quarter of
# the process's file limit, so a few groups never take the agent's last descriptors
_FILES = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
MAX_HELD = 512 if _FILES == resource.RLIM_INFINITY else min(512, _FILES // 4)
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
    start: int  # with the pid, who the process is
    threads: int  # at the last refresh: 1 reads schedstat alone, more read per thread
    cpu_ns: int
    waits: dict[int, int]  # thread id -> run-queue wait so far, ns
    rss_pages: int = 0  # at the last refresh
    # its /proc/PID/schedstat kept open (one thread): a tick reads it with one pread, and
    # once the process is gone it fails (ESRCH) even if its pid is taken again
    fd: int = -1

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass
class _Members:
    pids: list[int] = field(default_factory=list)
    found_by: str = ""


def _open_schedstat(pid: int) -> int:
    try:
        return os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1


def _read_held(fd: int) -> tuple[int, int] | None:
    """(ns on a CPU, ns waiting) from a held schedstat; None: the process is gone."""
    try:
        fields = os.pread(fd, 256, 0).split()
        return int(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def _same(was: _Tracked, stat: procfs.Stat | None) -> bool:
    """Whether a tracked process is still the one it was, read the same way."""
    return (
        stat is not None
        and stat.state != "Z"
        and stat.start == was.start
        and (stat.threads == 1) == (was.threads == 1)
    )


def _join(pid: int, stat: procfs.Stat, hold: bool) -> "_Tracked | None":
    """A process joining, its counters primed (its schedstat held open if `hold` and it
    has one thread); None: it is gone already."""
    read = _read_cpu(pid, stat.threads)
    if read is None:
        return None
    joining = _Tracked(stat.start, stat.threads, *read)
    if stat.threads == 1 and hold:
        joining.fd = _open_schedstat(pid)
    return joining


def _read_cpu(pid: int, threads: int) -> tuple[int, dict[int, int]] | None:
    """(CPU time so far in ns, run-queue waits by thread) of a process; None: gone."""
    if threads <= 1:
        one = procfs.parse_schedstat(procfs.read(f"/proc/{pid}/schedstat") or "")
        return None if one is None else (one[0], {pid: one[1]})
    stat = procfs.parse_stat(procfs.read(f"/proc/{pid}/stat") or "")
    if stat is None:
        return None
    ns = stat.cpu_ticks * 1_000_000_000 // procfs.CLOCK_TICKS
    return ns, procfs.run_queue_waits(pid, threads)


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

    def close(self) -> None:
        """Close the files held open (the group samples nothing until it refreshes)."""
        for was in self._tracked.values():
            was.close()
        self._tracked = {}
        self._refreshed = -float("inf")

    def __del__(self) -> None:
        for was in getattr(self, "_tracked", {}).values():
            was.close()

    def refresh_at_next_sample(self) -> None:
        """Look at the membership again on the next sample, not only every REFRESH_S (a
        store forks a process per connection as a run starts)."""
        self._refreshed = -float("inf")

    def _drop(self, pid: int) -> None:
        self._tracked.pop(pid).close()

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
        cpu = wait = busiest = 0
        for pid, was in list(self._tracked.items()):
            if pid in joined:  # primed just now: counted from the next sample on
                continue
            if was.fd >= 0:  # the common case, kept short: one pread
                held = _read_held(was.fd)
                if held is None:
                    self._drop(pid)
                    continue
                used = max(0, held[0] - was.cpu_ns)
                waited = max(0, held[1] - was.waits.get(pid, held[1]))
                was.cpu_ns, was.waits = held[0], {pid: held[1]}
            else:
                read = _read_cpu(pid, was.threads)
                if read is None:
                    self._drop(pid)
                    continue
                used = max(0, read[0] - was.cpu_ns)
                waited = sum(max(0, w - was.waits.get(t, w)) for t, w in read[1].items())
                was.cpu_ns, was.waits = read
            # The kernel adds a running task's time at its ticks: over a short interval a
            # process can seem to have run longer than its threads could. Not more.
            used = min(used, int(dt * 1e9) * max(1, was.threads))
            cpu, wait, busiest = cpu + used, wait + waited, max(busiest, used + waited)
        if not self._tracked:
            return None
        per_s = 1e-9 / dt if dt > 0 else 0.0
        return GroupSample(
            cpu_cores=cpu * per_s,
            cores_allowed=self._allowed,
            busiest_cores=busiest * per_s,
            rss_bytes=sum(t.rss_pages for t in self._tracked.values()) * procfs.PAGE_BYTES,
            processes=len(self._tracked),
            found_by=self._found_by,
            runqueue_cores=wait * per_s,
        )

    def _refresh(self) -> set[int]:
        """Membership again (each member's RSS, and who it is); the pids that joined
        (primed, not yet sampled)."""
        self._refreshed = time.monotonic()
        try:
            members = self._members()
        except (OSError, psutil.Error):  # the host changed under the walk: next refresh
            members = _Members(list(self._tracked), self._found_by)
        self._found_by = members.found_by
        old, tracked, joined = self._tracked, {}, set()
        held = sum(t.fd >= 0 for t in old.values())
        for pid in list(dict.fromkeys(members.pids))[:MAX_PROCESSES]:
            stat = procfs.parse_stat(procfs.read(f"/proc/{pid}/stat") or "")
            was = old.pop(pid, None)
            if was is not None and not _same(was, stat):
                held -= was.fd >= 0
                was.close()
                was = None
            if stat is None or stat.state == "Z":
                continue
            if was is None:
                was = _join(pid, stat, held < MAX_HELD)
                if was is None:
                    continue
                held += was.fd >= 0
                joined.add(pid)
            was.threads, was.rss_pages = stat.threads, stat.rss_pages
            tracked[pid] = was
        for gone in old.values():  # no longer members
            gone.close()
        self._tracked = tracked
        self._allowed = cores_allowed(list(tracked))
        return joined


def cores_allowed(pids: list[int]) -> float:
    """The CPUs the processes may run on together (their affinities' union), capped by
    their cgroups' CPU quotas summed (no cap if any process's cgroup has none)."""
    cpus: set[int] = set()
    quotas: dict[str, float | None] = {}  # by the text of /proc/PID/cgroup
    for pid in pids:
        try:
            cpus |= os.sched_getaffinity(pid)
        except OSError:
            continue
        cgroup = procfs.read(f"/proc/{pid}/cgroup") or ""
        if cgroup not in quotas:
            quotas[cgroup] = procfs.quota_of(cgroup)
    allowed = float(len(cpus))
    if not quotas or any(q is None for q in quotas.values()):
        return allowed
    return min(allowed, sum(q for q in quotas.values() if q is not None))


class StoreFinder:
    """Finds the store's processes as a StoreWatch says; the agent's own process, the load
    processes and the agent's ancestors (a harness that started it) are never the store's."""

    def __init__(self, watch: StoreWatch, clients: Callable[[], list[int]]) -> None:
        self.watch = watch
        self.clients = clients
        self._listeners: dict[int, tuple[int, int]] = {}  # port -> (inode, listening pid)
        self._inodes: set[int] = set()  # the clients' sockets when the servers were found
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
            add(discovery.descendants([pid]), f"pid {pid}")
        if self.watch.names:
            named = _by_name(set(self.watch.names))
            for name in self.watch.names:
                add(named.get(name, []), f"name {name}")
        if self.watch.container:
            add(_in_container(self.watch.container), f"container {self.watch.container}")
        if self.watch.discover and clients:
            for port, pid in sorted(self._servers_of(clients).items()):
                if pid not in never:
                    add(discovery.descendants([pid]), f"port {port}")
        return _Members(list(found)[:MAX_PROCESSES], ", ".join(how))

    def _servers_of(self, clients: list[int]) -> dict[int, int]:
        """port -> listening pid, for the local TCP servers the clients are connected to
        (a listener's process looked for once, kept while it holds that socket)."""
        inodes: set[int] = set()
        for pid in clients:
            inodes |= discovery.socket_inodes(pid)
        alive = all(os.path.exists(f"/proc/{pid}") for _, pid in self._listeners.values())
        if inodes == self._inodes and alive:  # the same connections: the same servers
            return {port: pid for port, (_, pid) in self._listeners.items()}
        self._inodes = inodes
        listening = discovery.servers_of(inodes, _local_addresses())
        known = {}
        for port, inode in listening.items():
            was = self._listeners.get(port)
            if was is not None and was[0] == inode and os.path.exists(f"/proc/{was[1]}"):
                known[port] = was
            elif (owner := discovery.owner_of(inode)) is not None:
                known[port] = (inode, owner)
        self._listeners = known
        return {port: pid for port, (_, pid) in known.items()}


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
