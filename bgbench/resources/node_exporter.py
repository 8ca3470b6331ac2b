"""A remote store host sampled through Prometheus' node_exporter: its /metrics scraped
(HTTP GET, bounded in time and bytes), the few series wanted kept (bounded in number) and
parsed with prometheus_client's text parser, counters turned into rates between two
scrapes. The reply is untrusted: a reply too large, too slow, malformed or without the
CPU series raises ScrapeError (a SystemFault: the caller notes it and carries on).

Figures, as HostSampler takes them on an agent's host (bgbench/resources/host.py):
- CPU per core: busy share = 1 - Δ(idle + iowait) / Δ(all modes) of node_cpu_seconds_total;
  steal counts as busy (the core was not there for the host's work).
- Memory: node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes.
- Disk: node_disk_read_bytes_total, node_disk_written_bytes_total summed, busy share the
  busiest device's Δ node_disk_io_time_seconds_total / Δt; device-mapper, loop, ram and
  optical devices are left out (their bytes are a disk's counted again). node_exporter
  itself leaves out partitions.
- Network: node_network_{receive,transmit}_bytes_total summed over every device, loopback
  included; capacity the sum of node_network_speed_bytes that are known (> 0).
"""

import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from prometheus_client.parser import text_string_to_metric_families

from bgbench.errors import SystemFault, UserError
from bgbench.resources.model import HostSample

MAX_BYTES = 8 * 1024 * 1024  # a node_exporter's reply is ~100 KB; beyond this: refused
MAX_SERIES = 20_000  # series kept of the wanted families
MAX_CORES = 4096
MAX_DEVICES = 512
CHUNK = 64 * 1024
WANTED = (
    "node_cpu_seconds_total",
    "node_memory_MemTotal_bytes",
    "node_memory_MemAvailable_bytes",
    "node_disk_read_bytes_total",
    "node_disk_written_bytes_total",
    "node_disk_io_time_seconds_total",
    "node_network_receive_bytes_total",
    "node_network_transmit_bytes_total",
    "node_network_speed_bytes",
)
NOT_DISKS = re.compile(r"(dm-|loop|z?ram|sr|fd)\d+")
IDLE_MODES = ("idle", "iowait")
DISK_COUNTERS = {  # the index of each in Counters.disks[device]
    "node_disk_read_bytes_total": 0,
    "node_disk_written_bytes_total": 1,
    "node_disk_io_time_seconds_total": 2,
}


class ScrapeError(SystemFault):
    """A node_exporter could not be scraped: unreachable, too slow, or its reply refused."""


NETWORK_COUNTERS = {"node_network_receive_bytes_total": 0, "node_network_transmit_bytes_total": 1}


@dataclass
class Counters:
    """What one scrape gives: counters by label, and the gauges."""

    cpu: dict[int, dict[str, float]] = field(default_factory=dict)  # cpu -> mode -> seconds
    memory_total: float = 0.0
    memory_available: float = 0.0
    disks: dict[str, list[float]] = field(default_factory=dict)  # read, written, io seconds
    nics: dict[str, list[float]] = field(default_factory=dict)  # received, sent bytes
    speeds: dict[str, float] = field(default_factory=dict)  # the links that say their speed

    @property
    def net_rx(self) -> float:
        return sum(n[0] for n in self.nics.values())

    @property
    def net_tx(self) -> float:
        return sum(n[1] for n in self.nics.values())

    @property
    def speed(self) -> float:
        return sum(self.speeds.values())

    def link(self, direction: int) -> float:
        """Bytes received (0) or sent (1) through the links whose speed is known."""
        return sum(n[direction] for name, n in self.nics.items() if name in self.speeds)


def endpoint_url(endpoint: str) -> tuple[str, str]:
    """("http://HOST:PORT/metrics", "HOST:PORT") from "HOST:PORT" or an http(s) URL (with
    /metrics when it names no path); UserError when it is neither."""
    text = endpoint.strip()
    if not text or len(text) > 512 or any(c.isspace() or ord(c) < 32 for c in text):
        raise UserError(f"node_exporter endpoint {endpoint[:60]!r} is not HOST:PORT or a URL")
    url = text if "://" in text else f"http://{text}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise UserError(f"node_exporter endpoint {text!r}: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None:
        raise UserError(f"node_exporter endpoint {text!r} is not HOST:PORT or http(s)://HOST:PORT")
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    return f"{parts.scheme}://{parts.netloc}{path}", parts.netloc


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is refused (an error), not followed to wherever the reply points."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


# Straight to the endpoint: no proxy from the environment, no redirect followed.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def fetch(url: str, timeout_s: float, max_bytes: int = MAX_BYTES) -> str:
    """GET `url`, the whole reply within `timeout_s` and `max_bytes`, as text."""
    deadline = time.monotonic() + timeout_s
    request = urllib.request.Request(url, headers={"Accept": "text/plain"})
    try:
        with _OPENER.open(request, timeout=timeout_s) as reply:
            body = bytearray()
            while chunk := reply.read(CHUNK):
                body += chunk
                if len(body) > max_bytes:
                    raise ScrapeError(f"{url}: reply larger than {max_bytes} bytes")
                if time.monotonic() > deadline:
                    raise ScrapeError(f"{url}: reply not read within {timeout_s:g} s")
    except ScrapeError:
        raise
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ScrapeError(f"{url}: {getattr(e, 'reason', e)}") from None
    return body.decode("utf-8", "replace")


def wanted_lines(text: str) -> str:
    """The sample lines of the wanted families only (at most MAX_SERIES): node_exporter
    says much more, and the parser need not see it."""
    kept = []
    for line in text.splitlines():
        if line.startswith(WANTED) and line.partition("{")[0].partition(" ")[0] in WANTED:
            kept.append(line)
            if len(kept) > MAX_SERIES:
                raise ScrapeError(f"more than {MAX_SERIES} series of the wanted metrics")
    return "\n".join(kept) + "\n"


def parse(text: str) -> Counters:
    """The counters of a node_exporter reply; ScrapeError when malformed or without CPU."""
    out = Counters()
    try:
        families = list(text_string_to_metric_families(wanted_lines(text)))
    except (ValueError, IndexError, TypeError) as e:
        raise ScrapeError(f"malformed metrics: {str(e)[:200]}") from None
    for family in families:
        for s in family.samples:
            _take(out, s.name, s.labels, float(s.value))
    if not out.cpu:
        raise ScrapeError("no node_cpu_seconds_total in the reply: not a node_exporter?")
    return out


def _take(out: Counters, name: str, labels: dict[str, str], value: float) -> None:
    if value != value or value in (float("inf"), float("-inf")):  # NaN, infinities
        return
    if name == "node_cpu_seconds_total":
        cpu = labels.get("cpu", "")
        if cpu.isdigit() and (int(cpu) in out.cpu or len(out.cpu) < MAX_CORES):
            out.cpu.setdefault(int(cpu), {})[labels.get("mode", "")] = value
    elif name == "node_memory_MemTotal_bytes":
        out.memory_total = value
    elif name == "node_memory_MemAvailable_bytes":
        out.memory_available = value
    elif name.startswith("node_disk_"):
        device = labels.get("device", "")
        full = device not in out.disks and len(out.disks) >= MAX_DEVICES
        if not NOT_DISKS.fullmatch(device) and not full:
            out.disks.setdefault(device, [0.0, 0.0, 0.0])[DISK_COUNTERS[name]] = value
    elif name.startswith("node_network_"):
        _take_network(out, name, labels.get("device", ""), value)


def _take_network(out: Counters, name: str, device: str, value: float) -> None:
    if device not in out.nics and len(out.nics) >= MAX_DEVICES:
        return
    if name == "node_network_speed_bytes":
        if value > 0:
            out.speeds[device] = value
        return
    direction = NETWORK_COUNTERS.get(name)
    if direction is not None:
        out.nics.setdefault(device, [0.0, 0.0])[direction] = value


def cpu_shares(before: Counters, after: Counters) -> list[float]:
    """Each core's busy share between two scrapes, cores in order of their number."""
    shares = []
    for cpu in sorted(after.cpu):
        a, b = after.cpu[cpu], before.cpu.get(cpu, {})
        total = sum(a.values()) - sum(b.values())
        idle = sum(a.get(m, 0.0) - b.get(m, 0.0) for m in IDLE_MODES)
        shares.append(0.0 if total <= 0 else min(1.0, max(0.0, 1.0 - idle / total)))
    return shares


def _disks(before: Counters, after: Counters, dt: float) -> tuple[float, float, float, str]:
    read = written = busy = 0.0
    busiest = ""
    for device, (r, w, io) in sorted(after.disks.items()):
        if device not in before.disks or dt <= 0:
            continue
        r0, w0, io0 = before.disks[device]
        read, written = read + max(0.0, r - r0) / dt, written + max(0.0, w - w0) / dt
        share = min(1.0, max(0.0, io - io0) / dt)
        if share > busy or not busiest:
            busy, busiest = share, device
    return read, written, busy, busiest


class NodeExporter:
    """One node_exporter endpoint; each sample() scrapes it and gives the rates since the
    previous scrape (the first primes: zero rates, interval_s 0)."""

    def __init__(self, endpoint: str, timeout_s: float = 2.0) -> None:
        self.url, self.address = endpoint_url(endpoint)
        if not 0 < timeout_s <= 60:
            raise UserError(f"node_exporter timeout {timeout_s!r} s: give 0 to 60 s")
        self.timeout_s = timeout_s
        self._last: Counters | None = None
        self._at = 0.0

    @property
    def name(self) -> str:
        return f"node_exporter {self.address}"

    def sample(self, elapsed_s: float) -> HostSample:
        counters = parse(fetch(self.url, self.timeout_s))
        now = time.monotonic()
        before = self._last or counters
        dt = now - self._at if self._last is not None else 0.0
        self._last, self._at = counters, now
        read, written, busy, busiest = _disks(before, counters, dt)
        rate = _Rate(dt)
        return HostSample(
            host_id=self.name,
            host=self.address,
            source="node_exporter",
            elapsed_s=elapsed_s,
            interval_s=dt,
            cpu_per_core=cpu_shares(before, counters),
            memory_used_bytes=int(max(0.0, counters.memory_total - counters.memory_available)),
            memory_total_bytes=int(counters.memory_total),
            disk_read_bytes_per_s=read,
            disk_write_bytes_per_s=written,
            disk_busy=busy,
            busiest_disk=busiest,
            net_rx_bytes_per_s=rate(counters.net_rx - before.net_rx),
            net_tx_bytes_per_s=rate(counters.net_tx - before.net_tx),
            net_capacity_bytes_per_s=counters.speed,
            net_link_bytes_per_s=max(
                rate(counters.link(0) - before.link(0)), rate(counters.link(1) - before.link(1))
            ),
        )


@dataclass(frozen=True)
class _Rate:
    dt: float

    def __call__(self, delta: float) -> float:
        return max(0.0, delta) / self.dt if self.dt > 0 else 0.0
