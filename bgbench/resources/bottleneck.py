"""What bound an experiment, named from its hosts' figures (pure: figures in, a Bottleneck
out).

Every resource that can saturate is a candidate with a utilisation (used / capacity):
- the store's processes: their demand (CPU plus run-queue wait) over the cores they are
  allowed (affinity, cgroup quota) -> "server_cpu";
- the load processes: their demand over their cores, or the busiest one's demand over one
  core (one interpreter runs on one core) -> "client";
- a host's whole CPU (busy cores over cores): the larger consumer on it is named, the
  store's processes or the load's, or "setup" when other processes used more than both
  (another tenant, a noisy neighbour: the setup bound it); a host watched only for the
  store (node_exporter, a monitor agent) -> "server_cpu";
- the busiest disk's busy share on a host the store runs on -> "server_disk";
- a host's network: the busier direction through the links whose speed is known, over
  their speed (loopback traffic never counts) -> "network".
Those at or above their threshold saturated; the highest utilisation names the
bottleneck ("setup" only when nothing else saturated), the others are listed. None
saturated: "none" (the store's latency or locking set the limit), with the busiest
resource named. No figures: "unmeasured".
"""

from dataclasses import dataclass

from bgbench.resources.model import Bottleneck, HostFigures


@dataclass(frozen=True)
class Thresholds:
    """The utilisation at which each resource counts as saturated, in (0, 1]."""

    cpu: float = 0.9  # the store's processes, and a host's whole CPU
    client: float = 0.9  # the load processes
    disk: float = 0.9
    network: float = 0.9


UNMEASURED = "resources not measured: no host sample fell in the experiment"


def name_bottleneck(
    hosts: list[HostFigures], thresholds: Thresholds, embedded_store: bool
) -> Bottleneck:
    """The resource that bound the experiment (see the module's text)."""
    measured = [h for h in hosts if h.samples > 0]
    if not measured:
        return Bottleneck(kind="unmeasured", text=UNMEASURED)
    candidates = [c for h in measured for c in _candidates(h, thresholds, embedded_store)]
    if not candidates:
        return Bottleneck(kind="unmeasured", text=UNMEASURED)
    ranked = sorted(candidates, key=lambda c: c[1].utilisation, reverse=True)
    saturated = [b for threshold, b in ranked if b.utilisation >= threshold]
    if not saturated:
        _, busiest = ranked[0]
        return Bottleneck(
            kind="none",
            resource=busiest.resource,
            host=busiest.host,
            used=busiest.used,
            capacity=busiest.capacity,
            utilisation=busiest.utilisation,
            text="no resource saturated: the store's latency or locking set the limit "
            f"(busiest: {busiest.text})",
        )
    # "setup" only when neither the store's nor the load's processes saturated themselves
    saturated.sort(key=lambda b: b.kind == "setup")  # stable: by utilisation otherwise
    top = saturated[0]
    top.others = [b.text for b in saturated[1:]]
    top.client_bound = top.kind == "client"
    return top


def _candidates(h: HostFigures, t: Thresholds, embedded: bool) -> list[tuple[float, Bottleneck]]:
    """Each resource of host `h` with the threshold it saturates at."""
    out: list[tuple[float, Bottleneck]] = []
    store = _store_cpu(h)
    if store is not None:
        out.append((t.cpu, store))
    out += [(t.client, b) for b in _load_cpu(h, embedded)]
    whole = _host_cpu(h, embedded)
    if whole is not None:
        out.append((t.cpu, whole))
    if h.watches_store and h.disk_busy > 0:
        disk = h.busiest_disk or "the busiest disk"
        out.append(
            (
                t.disk,
                _named(
                    "server_disk", f"disk {disk}", h, h.disk_busy, 1.0,
                    f"disk {disk} busy {_pct(h.disk_busy)} of the time on {h.host} (read "
                    f"{_rate(h.disk_read_bytes_per_s)}, written {_rate(h.disk_write_bytes_per_s)})",
                ),
            )
        )  # fmt: skip
    if h.net_capacity_bytes_per_s > 0:
        used = h.net_link_bytes_per_s  # through the links, loopback left out
        cap = h.net_capacity_bytes_per_s
        out.append(
            (
                t.network,
                _named(
                    "network", "network", h, used, cap,
                    f"network at {_pct(used / cap)} of {_rate(cap)} on {h.host} (received "
                    f"{_rate(h.net_rx_bytes_per_s)}, sent {_rate(h.net_tx_bytes_per_s)})",
                ),
            )
        )  # fmt: skip
    return out


def _store_cpu(h: HostFigures) -> Bottleneck | None:
    if not h.store_found_by:
        return None
    allowed = h.store_cores_allowed or float(h.cores)
    if allowed <= 0:
        return None
    demand = h.store_cpu_cores + h.store_runqueue_cores
    confined = (
        f"; confined to {allowed:g} of the host's {h.cores} cores"
        if h.cores and allowed < h.cores
        else ""
    )
    text = (
        f"server CPU {demand:.2f} of {_cores(allowed)} on {h.host} ({h.store_processes} "
        f"processes, {h.store_found_by}: {h.store_cpu_cores:.2f} used + "
        f"{h.store_runqueue_cores:.2f} waiting for a core{confined})"
    )
    return _named("server_cpu", "server CPU", h, demand, allowed, text)


def _load_cpu(h: HostFigures, embedded: bool) -> list[Bottleneck]:
    if h.load_processes <= 0:
        return []
    inside = "; the store runs inside them (embedded)" if embedded else ""
    out = []
    allowed = h.load_cores_allowed or float(h.cores)
    demand = h.load_cpu_cores + h.load_runqueue_cores
    if allowed > 0:
        text = (
            f"load processes at {_pct(demand / allowed)} of their {_cores(allowed)} on "
            f"{h.host} ({h.load_processes} processes: {h.load_cpu_cores:.2f} cores used + "
            f"{h.load_runqueue_cores:.2f} waiting{inside})"
        )
        out.append(_named("client", "load processes' CPU", h, demand, allowed, text))
    if h.load_busiest_cores > 1:  # its threads waited for a core beside what it used
        text = (
            f"a load process asking for {h.load_busiest_cores:.2f} of 1 core on {h.host} (its "
            f"threads' CPU and their wait for a core; one interpreter runs on one core{inside})"
        )
        out.append(_named("client", "a load process's core", h, h.load_busiest_cores, 1.0, text))
    elif h.load_busiest_cores > 0:
        text = (
            f"a load process at {_pct(h.load_busiest_cores)} of its core on {h.host} "
            f"(one interpreter runs on one core{inside})"
        )
        out.append(_named("client", "a load process's core", h, h.load_busiest_cores, 1.0, text))
    return out


def _host_cpu(h: HostFigures, embedded: bool) -> Bottleneck | None:
    """The host's whole CPU, named after its larger consumer (the CPU each group used;
    what other processes used is said, not named: it is the setup's)."""
    if h.cores <= 0:
        return None
    busy = f"host CPU {h.cpu_cores:.2f} of {_cores(h.cores)} busy on {h.host}"
    if h.source in ("node_exporter", "monitor") and not h.load_processes:
        return _named("server_cpu", "server host CPU", h, h.cpu_cores, h.cores, busy)
    store, load = h.store_cpu_cores, h.load_cpu_cores
    other = max(0.0, h.cpu_cores - store - load)
    inside = " (the store inside them)" if embedded else ""
    parts = [f"the load processes {load:.2f}{inside}"] if h.load_processes else []
    if h.store_found_by:
        parts.append(f"the store's processes {store:.2f} ({h.store_found_by})")
    text = f"{busy}: {', '.join([*parts, f'other processes {other:.2f}'])}"
    measured = h.load_processes or h.store_found_by
    if measured and other > max(store, load):  # neither the store nor the client did
        text += " (the setup bound it, not the store or the client)"
        return _named("setup", "host CPU", h, h.cpu_cores, h.cores, text)
    if h.store_found_by and store >= load:
        return _named("server_cpu", "server host CPU", h, h.cpu_cores, h.cores, text)
    if h.load_processes:
        return _named("client", "client host CPU", h, h.cpu_cores, h.cores, text)
    kind = "server_cpu" if h.watches_store else "client"
    return _named(kind, "host CPU", h, h.cpu_cores, h.cores, text)


def _named(
    kind: str, resource: str, h: HostFigures, used: float, capacity: float, text: str
) -> Bottleneck:
    return Bottleneck(
        kind=kind,
        resource=resource,
        host=h.host,
        used=used,
        capacity=float(capacity),
        utilisation=used / capacity if capacity > 0 else 0.0,
        text=text,
    )


def _cores(n: float) -> str:
    return f"{n:g} core" if n == 1 else f"{n:g} cores"


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _rate(bytes_per_s: float) -> str:
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_s >= size:
            return f"{bytes_per_s / size:.1f} {unit}"
    return f"{bytes_per_s:.0f} B/s"
