"""Listed agent addresses whose name stands for many agents: a Kubernetes headless service, a
Compose service with replicas. `NAME:PORT` where NAME resolves to several addresses is one
agent per address (deduplicated, sorted), looked up at each handshake, so replicas that
come and go are seen when the agents are reached again. The token and TLS are unchanged:
each such agent's certificate is checked for NAME (unless agents.tls.server_name says
otherwise), as it would be were the name dialled.

A name that resolves to one address, an IP address, and a name that does not resolve (the
handshake names it) stay as listed. IPv4 addresses are preferred: a dual-stack name lists
each host twice (A and AAAA), and `localhost` is 127.0.0.1 and ::1, both one host."""

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[IPAddress]]


@dataclass(frozen=True)
class Expanded:
    """The agents a listing stands for: their addresses, a capacity each (a name's weight
    for each of its addresses), and the TLS name of those expanded from a name."""

    addresses: list[str]
    capacities: list[float] | None
    server_names: dict[str, str] = field(default_factory=dict)
    # each name that stood for several agents, and how many
    names: dict[str, int] = field(default_factory=dict)

    def said(self) -> str:
        """What the expansion was, for the coordinator's line ("" if none)."""
        return "; ".join(f"{name} is {n} agents" for name, n in self.names.items())


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to for TCP (empty if it does not resolve)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    found: list[IPAddress] = []
    for family, *_, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            found.append(ipaddress.ip_address(str(sockaddr[0]).partition("%")[0]))
    return found


def agents_of(address: str, resolver: Resolver = resolve) -> list[str]:
    """The agent addresses `address` (host:port) stands for: itself, or one per address its
    name resolves to."""
    host, _, port = address.rpartition(":")
    bare = host.strip("[]")
    if _is_ip(bare) or not port.isdigit():
        return [address]
    found = set(resolver(bare, int(port)))
    v4 = sorted(a for a in found if isinstance(a, ipaddress.IPv4Address))
    chosen: Sequence[IPAddress] = v4 or sorted(a for a in found if a.version == 6)
    if len(chosen) < 2:
        return [address]
    return [f"{a}:{port}" if a.version == 4 else f"[{a}]:{port}" for a in chosen]


def expand(
    addresses: Sequence[str],
    capacities: Sequence[float] | None = None,
    resolver: Resolver = resolve,
) -> Expanded:
    """Every listed address expanded (see `agents_of`); an address two names share is one
    agent, the first's."""
    out: list[str] = []
    caps: list[float] = []
    server_names: dict[str, str] = {}
    names: dict[str, int] = {}
    for i, listed in enumerate(addresses):
        agents = agents_of(listed, resolver)
        if agents != [listed]:
            names[listed] = len(agents)
        for agent in agents:
            if agent != listed and agent in out:
                continue
            out.append(agent)
            caps.append(capacities[i] if capacities else 1.0)
            if agent != listed:
                server_names[agent] = listed.rpartition(":")[0]
    return Expanded(out, caps if capacities else None, server_names, names)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return False
    return True
