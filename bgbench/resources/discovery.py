"""Which local TCP servers the load processes are connected to, and a process's
descendants: read from /proc directly and bounded, since a store's group is looked for
every few seconds on a host that may run hundreds of processes (psutil's system-wide
connection and children listings read every process of the host each time).

- A process's sockets: the inodes its /proc/PID/fd links name ("socket:[INODE]").
- /proc/net/tcp and tcp6: each socket's local and remote address, state and inode.
- A listener's process: the process one of whose fds is the listening socket's inode (a
  walk of /proc/*/fd, done once per port: the answer is kept while that process lives).
- Descendants: /proc/PID/task/TID/children (one read per process of the tree); where the
  kernel has no such file, every process's parent from /proc/*/stat.

Limits: a server run by another user is found only by an agent that may read its
/proc/PID/fd (root, or that user); a server in a container is reached through a proxy
(docker-proxy: found, but not the container's processes) or a NAT rule (no listener on
the host at all): name such a store's processes by container, name or pid instead.
"""

import ipaddress
import os
from dataclasses import dataclass

from bgbench.resources import procfs

MAX_FDS = 65_536  # fds read per process
MAX_SOCKETS = 200_000  # lines read of /proc/net/tcp and tcp6 together
MAX_TREE = 4096  # processes in a descendants walk
TABLE_BYTES = 32 * 1024 * 1024
ESTABLISHED, LISTEN = "01", "0A"


@dataclass(frozen=True)
class Socket:
    local: tuple[str, int]
    remote: tuple[str, int]
    state: str
    inode: int


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets process `pid` has open (empty if it cannot be read)."""
    base = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(base)[:MAX_FDS]
    except OSError:
        return set()
    inodes = set()
    for fd in fds:
        try:
            link = os.readlink(f"{base}/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]) if link[8:-1].isdigit() else -1)
    inodes.discard(-1)
    return inodes


def parse_address(text: str) -> tuple[str, int] | None:
    """ "0100007F:1538" (IPv4) or 32 hex digits and a port (IPv6), as /proc/net/tcp writes
    them (each 32-bit word in the host's byte order: little-endian here) -> (ip, port)."""
    host, _, port = text.partition(":")
    try:
        raw = bytes.fromhex(host)
        number = int(port, 16)
    except ValueError:
        return None
    if len(raw) not in (4, 16) or not 0 <= number < 65536:
        return None
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words)), number


def parse_tcp_table(text: str, inodes: set[int] | None = None) -> list[Socket]:
    """The sockets of a /proc/net/tcp or tcp6 text (its header line skipped; malformed
    lines too): every one, or (`inodes` given) the listening ones and those in `inodes`,
    whose addresses alone are parsed (a busy host has thousands of sockets)."""
    out = []
    for line in text.splitlines()[1 : MAX_SOCKETS + 1]:
        fields = line.split()
        if len(fields) < 10 or not fields[9].isdigit():
            continue
        inode = int(fields[9])
        if inodes is not None and fields[3] != LISTEN and inode not in inodes:
            continue
        local, remote = parse_address(fields[1]), parse_address(fields[2])
        if local is not None and remote is not None:
            out.append(Socket(local, remote, fields[3], inode))
    return out


def tcp_sockets(inodes: set[int] | None = None) -> list[Socket]:
    """The host's TCP sockets (its network namespace's), IPv4 and IPv6: every one, or
    the listening ones and those in `inodes`."""
    out: list[Socket] = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name, encoding="ascii", errors="replace") as table:
                out += parse_tcp_table(table.read(TABLE_BYTES), inodes)
        except OSError:
            continue
    return out[:MAX_SOCKETS]


def is_local(ip: str, local: set[str]) -> bool:
    """Whether an address is this host's: loopback, or one of its interfaces' addresses
    (an IPv4 address mapped into IPv6 counts as itself)."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    return bool(address.is_loopback) or str(address) in local


def servers_of(inodes: set[int], local: set[str]) -> dict[int, int]:
    """port -> the inode of the local socket listening on it, for every local TCP server
    that one of the sockets `inodes` (the clients') has an established connection to."""
    sockets = tcp_sockets(inodes)
    ports = {
        s.remote[1]
        for s in sockets
        if s.inode in inodes and s.state == ESTABLISHED and is_local(s.remote[0], local)
    }
    listening: dict[int, int] = {}
    for s in sockets:
        if s.state == LISTEN and s.local[1] in ports and s.inode:
            listening.setdefault(s.local[1], s.inode)
    return listening


def owner_of(inode: int) -> int | None:
    """The process that has the socket `inode` open (the lowest pid of those that do)."""
    needle = f"socket:[{inode}]"
    for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
        if needle in _fd_links(pid):
            return pid
    return None


def _fd_links(pid: int) -> set[str]:
    base = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(base)[:MAX_FDS]
    except OSError:
        return set()
    links = set()
    for fd in fds:
        try:
            links.add(os.readlink(f"{base}/{fd}"))
        except OSError:
            continue
    return links


def descendants(roots: list[int]) -> list[int]:
    """The roots that run and every descendant of theirs (at most MAX_TREE processes)."""
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        return _descendants_by_parent(roots)
    seen: dict[int, None] = {}
    todo = [r for r in roots if os.path.exists(f"/proc/{r}")]
    while todo and len(seen) < MAX_TREE:
        pid = todo.pop()
        if pid in seen:
            continue
        seen[pid] = None
        todo += _children(pid)
    return list(seen)[:MAX_TREE]


def _children(pid: int) -> list[int]:
    try:
        tids = os.listdir(f"/proc/{pid}/task")[: procfs.MAX_THREADS]
    except OSError:
        return []
    out = []
    for tid in tids:
        text = procfs.read(f"/proc/{pid}/task/{tid}/children", limit=MAX_TREE * 8) or ""
        out += [int(c) for c in text.split() if c.isdigit()]
    return out


def _descendants_by_parent(roots: list[int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = procfs.parse_stat(procfs.read(f"/proc/{name}/stat") or "")
            if stat is not None:
                children.setdefault(stat.parent, []).append(int(name))
    seen: dict[int, None] = {}
    todo = [r for r in roots if os.path.exists(f"/proc/{r}")]
    while todo and len(seen) < MAX_TREE:
        pid = todo.pop()
        if pid not in seen:
            seen[pid] = None
            todo += children.get(pid, [])
    return list(seen)
