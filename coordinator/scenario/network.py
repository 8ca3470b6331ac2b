"""Partitions on loopback through nftables: one table per scenario, `inet bgbench_<pid>_<n>`.

A partition drops TCP packets, both ways, in the table's output, input and forward hooks
(loopback traffic passes the output hook once per packet; a node in a 198.18.0.0/15
network namespace is reached through the others). "node X from others" drops what goes to
or comes from X's peer endpoints, and, when X has an address of its own, what goes between
X's address and the other nodes' peer endpoints (a node's outbound connections to its
peers); "from clients" drops what goes to or comes from X's client endpoints. Dropped, not
refused: a client or a peer sees what a cut network shows it, a connection that hangs.

The rules are the table's whole state, rewritten in one `nft -f` transaction on every
change (no rule handles to track); heal removes a node's partitions (or all). The table is
deleted when the scenario ends; a table left by a process that died (its pid is in the
name) is swept when the next scenario opens. Only 127.0.0.0/8 and 198.18.0.0/15 addresses
are ever filtered: anything else is refused before a rule is made.
"""

import contextlib
import ipaddress
import itertools
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bgbench.launchers.nodes import Endpoint as Endpoint  # tests and nodes.py name it here too

NFT_TIMEOUT_S = 10.0
MAX_NFT_OUTPUT = 1 << 20
TABLE_PREFIX = "bgbench_"
TABLE_NAME = re.compile(r"^table inet (bgbench_(\d+)_\d+)$")
ALLOWED_NETWORKS = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("198.18.0.0/15"))
HOOKS = ("output", "input", "forward")

_tables = itertools.count()


class NetworkFaultError(RuntimeError):
    """nft failed, is missing, or an address is outside the networks bgbench may filter."""


@dataclass(frozen=True)
class NetworkNode:
    """What a partition needs of a node: its own address ("" when it shares one) and the
    endpoints its peers and its clients reach it on."""

    name: str
    address: str
    client_endpoints: tuple[Endpoint, ...]
    peer_endpoints: tuple[Endpoint, ...]


def check_address(address: str, what: str) -> str:
    """`address` if it is an IPv4 address in 127.0.0.0/8 or 198.18.0.0/15, else refused."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise NetworkFaultError(f"{what}: {address!r} is not an IPv4 address") from None
    if ip.version != 4 or not any(ip in net for net in ALLOWED_NETWORKS):
        raise NetworkFaultError(
            f"{what}: {address} is outside 127.0.0.0/8 and 198.18.0.0/15; bgbench partitions "
            "only loopback clusters and network namespaces"
        )
    return str(ip)


def check_node(node: NetworkNode) -> None:
    """Every address a partition of `node` would filter is one bgbench may filter."""
    if node.address:
        check_address(node.address, f"node {node.name}")
    for e in (*node.client_endpoints, *node.peer_endpoints):
        check_address(e.address, f"node {node.name}")
        if not 0 < e.port < 65536:
            raise NetworkFaultError(f"node {node.name}: port {e.port} out of range")


def _endpoint_rules(endpoints: Iterable[Endpoint]) -> list[str]:
    rules = []
    for e in endpoints:
        rules.append(f"ip daddr {e.address} tcp dport {e.port} drop")
        rules.append(f"ip saddr {e.address} tcp sport {e.port} drop")
    return rules


def partition_rules(node: NetworkNode, others: Sequence[NetworkNode], side: str) -> list[str]:
    """The nft rules (in the table's `faults` chain) that cut `node` from `side`: "others"
    (its peers) or "clients"."""
    check_node(node)
    if side == "clients":
        return _endpoint_rules(node.client_endpoints)
    rules = _endpoint_rules(node.peer_endpoints)
    if node.address:
        mine = set(node.peer_endpoints)
        for other in others:
            check_node(other)
            for e in other.peer_endpoints:
                if e in mine or e.address == node.address:
                    continue
                rules.append(
                    f"ip saddr {node.address} ip daddr {e.address} tcp dport {e.port} drop"
                )
                rules.append(
                    f"ip saddr {e.address} tcp sport {e.port} ip daddr {node.address} drop"
                )
    return rules


def nft(script: str, timeout_s: float = NFT_TIMEOUT_S) -> str:
    """Run an nft script (`nft -f -`, no shell); its output. NetworkFaultError on failure."""
    if shutil.which("nft") is None:
        raise NetworkFaultError(
            "a partition needs nftables: the nft command is not installed "
            "(apt-get install nftables), and bgbench runs it as root"
        )
    try:
        done = subprocess.run(
            ["nft", "-f", "-"],
            input=script,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise NetworkFaultError(f"nft did not answer within {timeout_s:g} s") from None
    if done.returncode != 0:
        reason = " ".join(done.stderr[:2000].split()) or f"exit status {done.returncode}"
        raise NetworkFaultError(f"nft failed: {reason}")
    return done.stdout[:MAX_NFT_OUTPUT]


def bgbench_tables() -> list[str]:
    """The names of the bgbench_ tables nft lists now (any process's)."""
    out = nft("list tables inet\n")
    return [m.group(1) for line in out.splitlines() if (m := TABLE_NAME.match(line.strip()))]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_dead_tables() -> list[str]:
    """Delete the bgbench tables of processes that no longer run; their names."""
    swept = []
    for name in bgbench_tables():
        m = re.match(r"bgbench_(\d+)_", name)
        if m and not _alive(int(m.group(1))):
            with contextlib.suppress(NetworkFaultError):  # another sweeper was first
                nft(f"delete table inet {name}\n")
                swept.append(name)
    return swept


class NetworkFaults:
    """The partitions of one scenario, in a table of their own (made at the first
    partition, deleted by close). Thread-safe."""

    def __init__(self) -> None:
        self.table = f"{TABLE_PREFIX}{os.getpid()}_{next(_tables)}"
        self.partitions: dict[tuple[str, str], list[str]] = {}  # (node, side) -> rules
        self.created = False
        self._lock = threading.Lock()

    def partition(self, node: NetworkNode, others: Sequence[NetworkNode], side: str) -> str:
        rules = partition_rules(node, others, side)
        if not rules:
            raise NetworkFaultError(
                f"node {node.name} has no {'client' if side == 'clients' else 'peer'} "
                "endpoints to cut"
            )
        with self._lock:
            if not self.created:
                sweep_dead_tables()
            self.partitions[(node.name, side)] = rules
            self._write()
        return f"{node.name} cut from {side}: {len(rules)} drop rules in table inet {self.table}"

    def heal(self, node: str | None) -> str:
        with self._lock:
            healed = [k for k in self.partitions if node is None or k[0] == node]
            if not healed:
                return "nothing to heal" if node is None else f"no partition of {node} to heal"
            for k in healed:
                del self.partitions[k]
            self._write()
        return "healed " + ", ".join(f"{n} from {side}" for n, side in healed)

    def close(self) -> str:
        """Delete the table (every partition heals); "" when none was made."""
        with self._lock:
            self.partitions.clear()
            if not self.created:
                return ""
            nft(f"delete table inet {self.table}\n")
            self.created = False
        return f"deleted table inet {self.table}"

    def _write(self) -> None:
        """The whole table in one transaction: made (or emptied) and its rules written."""
        # add (a no-op when it exists), delete, define: a fresh table whether it existed or not
        lines = [f"table inet {self.table} {{}}", f"delete table inet {self.table}"]
        lines.append(f"table inet {self.table} {{")
        lines.append("  chain faults {")
        lines += [f"    {rule}" for rules in self.partitions.values() for rule in rules]
        lines.append("  }")
        for hook in HOOKS:
            lines.append(f"  chain {hook} {{")
            lines.append(f"    type filter hook {hook} priority -10; policy accept;")
            lines.append("    jump faults")
            lines.append("  }")
        lines.append("}")
        nft("\n".join(lines) + "\n")
        self.created = True
