"""The report's figures of resources, from the frames of coordinator/storage/frames_resources.py:
each resource's utilisation against T, and one experiment's hosts over time.

Like charts.py: matplotlib Figures made without pyplot, None when there is nothing to draw.
Host names come from the agents and endpoints (the network): matplotlib writes them as SVG
text, escaped.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, ScalarFormatter

from bgbench.coordinator.reports.charts import THREADS, XAxis, panel, rated

MAX_LINES = 24  # lines one chart draws at most (hosts x resources); the rest are left out
TIMELINE_SIZE = (7.0, 7.6)


@dataclass(frozen=True)
class Resource:
    column: str  # of the resources frame: a share of the resource's capacity
    label: str
    store_side: bool  # only on hosts that run the store (a server's disk, its CPU)


RESOURCES = (
    Resource("store_share", "server CPU", False),
    Resource("load_share", "load processes' CPU", False),
    Resource("cpu_share", "host CPU", False),
    Resource("disk_busy", "disk busy", True),
    Resource("net_share", "network", False),
)


def _serves(rows: pd.DataFrame) -> bool:
    """Whether a host's rows are of a host the store runs on (its processes watched, or
    watched as the store's host by a node_exporter or a monitor)."""
    return bool((rows["store_found_by"].astype(str) != "").any()) or bool(
        rows["source"].isin(["node_exporter", "monitor"]).any()
    )


def utilisation(
    resources: pd.DataFrame, experiments: pd.DataFrame, x: XAxis = THREADS
) -> Figure | None:
    """Each resource's share of its capacity against T (or the arrival rate), one line per
    host and resource, the mean of the rated experiments at each T; 1 is saturation."""
    seqs = set(rated(experiments)["seq"])
    rows = resources[resources["seq"].isin(seqs)]
    if rows.empty:
        return None
    fig = Figure(figsize=(7.0, 3.8))
    ax = fig.add_subplot()
    ax.set_title(f"Utilisation against {x.short}", loc="left", fontsize=11)
    ax.set_xlabel(x.label)
    ax.set_ylabel("share of capacity")
    ax.grid(True, alpha=0.3)
    several = rows["host_id"].nunique() > 1
    drawn = 0
    for _, part in rows.groupby("host_id", sort=False):
        name = str(part["host"].iloc[0])
        for res in RESOURCES:
            values = part.dropna(subset=[res.column])
            if values.empty or (res.store_side and not _serves(part)) or drawn >= MAX_LINES:
                continue
            by_x = values.groupby(x.column)[res.column].mean()
            label = f"{res.label} ({name})" if several else res.label
            ax.plot(by_x.index, by_x.to_numpy(), marker="o", label=label)
            drawn += 1
    if not drawn:
        return None
    ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8, label="saturated")
    ax.set_ylim(bottom=0)
    if len(rows[x.column]) and rows[x.column].max() / max(rows[x.column].min(), 1) >= 16:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
    elif x is THREADS:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=7, ncol=2)
    return fig


def _window(ax: Axes, series: pd.DataFrame) -> None:
    rated_rows = series[series["rated"].astype(bool)]
    if rated_rows.empty:
        return
    first, last = rated_rows["elapsed_s"].min(), rated_rows["elapsed_s"].max()
    if series["elapsed_s"].min() < first:
        ax.axvspan(series["elapsed_s"].min(), first, color="tab:gray", alpha=0.15)
    if series["elapsed_s"].max() > last:
        ax.axvspan(last, series["elapsed_s"].max(), color="tab:gray", alpha=0.15)


def _hosts(series: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One line per host (several agents on one host report the same host figures): the
    host's figures from its first stream; its load processes' cores summed over its
    streams, each stream's taken at the first one's instants."""
    out = []
    for _, part in series.groupby("host_id", sort=False):
        first = part[part["stream"] == part["stream"].iloc[0]].copy()
        at = first["elapsed_s"].to_numpy(dtype=float)
        total = np.zeros(len(at))
        seen = False
        for _, s in part.groupby("stream", sort=False):
            s = s.dropna(subset=["load_cpu_cores"])
            if not s.empty:
                total += np.interp(at, s["elapsed_s"].to_numpy(dtype=float),
                                   s["load_cpu_cores"].to_numpy(dtype=float))  # fmt: skip
                seen = True
        first["load_cpu_cores"] = total if seen else np.nan
        out.append((str(part["host"].iloc[0]), first))
    return out[:MAX_LINES]


def timeline(series: pd.DataFrame, title: str) -> Figure | None:
    """One experiment's hosts over time: busy cores of each host with its store's and load
    processes' cores; disk busy share; network bytes/s received and sent. What lies
    outside the rated window (the warm-up, the end) shaded."""
    if series.empty:
        return None
    fig = Figure(figsize=TIMELINE_SIZE, layout="constrained")
    cpu = panel(fig, 1, title, "cores busy")
    disk = panel(fig, 2, "Disk", "busy share")
    net = panel(fig, 3, "Network", "MB/s")
    net.set_xlabel("s into the experiment")
    hosts = _hosts(series)
    several = len(hosts) > 1
    for name, rows in hosts:
        tag = f" ({name})" if several else ""
        t = rows["elapsed_s"]
        cpu.plot(t, rows["cpu_cores"], label=f"host{tag}")
        _group_line(cpu, rows, "store_cpu_cores", f"store processes{tag}")
        _group_line(cpu, rows, "load_cpu_cores", f"load processes{tag}")
        disk.plot(t, rows["disk_busy"], label=f"busy{tag}")
        net.plot(t, rows["net_rx_bytes_per_s"] / 1e6, label=f"received{tag}")
        net.plot(t, rows["net_tx_bytes_per_s"] / 1e6, linestyle="--", label=f"sent{tag}")
    cores = series.groupby("host_id")["cores"].max()
    if len(cores) == 1 and int(cores.iloc[0]):
        cpu.axhline(int(cores.iloc[0]), color="black", linestyle=":", linewidth=0.8,
                    label=f"{int(cores.iloc[0])} cores")  # fmt: skip
    for ax in (cpu, disk, net):
        _window(ax, series)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, ncol=2)
    disk.set_ylim(top=max(1.05, float(series["disk_busy"].max() or 0) * 1.05))
    return fig


def _group_line(ax: Axes, rows: pd.DataFrame, column: str, label: str) -> None:
    values = rows.dropna(subset=[column])
    if not values.empty:
        ax.plot(values["elapsed_s"], values[column], linestyle="-.", label=label)


def _pairs(rows: pd.DataFrame, a: str, b: str, scale: float) -> list[str]:
    return [f"{x / scale:.2f} / {y / scale:.2f}" for x, y in zip(rows[a], rows[b], strict=True)]


def host_table(resources: pd.DataFrame) -> pd.DataFrame:
    """One experiment's hosts as the report tables them: figures a person reads."""
    watched = resources["store_found_by"].astype(str) != ""
    columns: dict[str, Any] = {
        "host": resources["host"],
        "source": resources["source"],
        "cores": resources["cores"],
        "CPU busy cores": resources["cpu_cores"],
        "store CPU cores": resources["store_cpu_cores"].where(watched),
        "store processes": resources["store_processes"].where(watched),
        "found by": resources["store_found_by"],
        "load CPU cores": resources["load_cpu_cores"].where(resources["load_processes"] > 0),
        "disk busy": resources["disk_busy"],
        "disk MB/s read / written": _pairs(
            resources, "disk_read_bytes_per_s", "disk_write_bytes_per_s", 1e6
        ),
        "net MB/s in / out": _pairs(resources, "net_rx_bytes_per_s", "net_tx_bytes_per_s", 1e6),
        "memory GB used / total": _pairs(resources, "memory_used_bytes", "memory_total_bytes", 1e9),
    }
    return pd.DataFrame(columns).reset_index(drop=True)
