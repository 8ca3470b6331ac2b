"""The resource frames of bgbench.results.load: what each experiment measured of its hosts
(ExperimentResult.resources, a ResourceFigures kept under the key "resources" of its
result JSON) and the bottleneck named from it.

resources (one row per experiment x host; an experiment that measured nothing has none)
    rating_id, seq, experiment_id, phase, threads, target_rate, status, host_id, host,
    source (agent|node_exporter|monitor), samples, cores, cpu_cores (busy cores, the
    whole host), cpu_share (cpu_cores / cores), memory_used_bytes, memory_total_bytes,
    disk_read_bytes_per_s, disk_write_bytes_per_s, disk_busy (the busiest disk's busy
    share), busiest_disk, net_rx_bytes_per_s, net_tx_bytes_per_s,
    net_capacity_bytes_per_s (0: unknown), net_share (the busier direction over the
    capacity; NaN when unknown), load_cpu_cores, load_runqueue_cores, load_cores_allowed,
    load_busiest_cores, load_processes, load_share ((cpu + run-queue) / cores allowed;
    NaN: no load process on the host), store_cpu_cores, store_runqueue_cores,
    store_cores_allowed, store_busiest_cores, store_rss_bytes, store_processes,
    store_found_by ("" : the store's processes not watched there), store_share (as
    load_share), bottleneck_kind, bottleneck (the experiment's, on each of its rows).
resource_series(rating_id, seq) (one row per sample of one experiment)
    stream (who sampled: "agent 127.0.0.1:50051", "node_exporter 10.0.0.5:9100"),
    host_id, host, source, elapsed_s, interval_s, rated (within the rated window), cores,
    cpu_cores, memory_used_bytes, memory_total_bytes, disk_read_bytes_per_s,
    disk_write_bytes_per_s, disk_busy, net_rx_bytes_per_s, net_tx_bytes_per_s,
    net_capacity_bytes_per_s, load_cpu_cores, load_runqueue_cores, load_cores_allowed,
    load_processes, store_cpu_cores, store_runqueue_cores, store_cores_allowed,
    store_processes (a group not sampled: NaN).

The experiments frame adds bottleneck_kind, bottleneck (its text) and client_bound; the
ratings frame the same of the rating: its summary's (RatingSummary.bottleneck) when it
names one, else those of the experiment that stands for it (`standing`).
"""

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from bgbench.coordinator.configuration.redaction import (
    is_secret_name,
    redact_strings,
    redact_text,
    redact_value,
)
from bgbench.resources.model import GroupSample, HostFigures, HostSample, ResourceFigures

KEY = "resources"  # of an experiment's result JSON
UNMEASURED = "unmeasured"
BOTTLENECK_COLUMNS = ("bottleneck_kind", "bottleneck", "client_bound")
EXPERIMENT_KEYS = ("rating_id", "seq", "experiment_id", "phase", "threads", "target_rate", "status")
HOST_FIGURES = (
    "host_id", "host", "source", "samples", "cores", "cpu_cores", "cpu_share",
    "memory_used_bytes", "memory_total_bytes", "disk_read_bytes_per_s",
    "disk_write_bytes_per_s", "disk_busy", "busiest_disk", "net_rx_bytes_per_s",
    "net_tx_bytes_per_s", "net_capacity_bytes_per_s", "net_share", "load_cpu_cores",
    "load_runqueue_cores", "load_cores_allowed", "load_busiest_cores", "load_processes",
    "load_share", "store_cpu_cores", "store_runqueue_cores", "store_cores_allowed",
    "store_busiest_cores", "store_rss_bytes", "store_processes", "store_found_by",
    "store_share",
)  # fmt: skip
RESOURCE_COLUMNS = (*EXPERIMENT_KEYS, *HOST_FIGURES, "bottleneck_kind", "bottleneck")
SAMPLE_FIGURES = (
    "cores", "cpu_cores", "memory_used_bytes", "memory_total_bytes", "disk_read_bytes_per_s",
    "disk_write_bytes_per_s", "disk_busy", "net_rx_bytes_per_s", "net_tx_bytes_per_s",
    "net_capacity_bytes_per_s",
)  # fmt: skip
GROUP_FIGURES = ("cpu_cores", "runqueue_cores", "cores_allowed", "processes")
SERIES_COLUMNS = (
    "stream", "host_id", "host", "source", "elapsed_s", "interval_s", "rated", *SAMPLE_FIGURES,
    *(f"{g}_{f}" for g in ("load", "store") for f in GROUP_FIGURES),
)  # fmt: skip


def redacted_result(result: dict[str, Any]) -> Any:
    """A recorded result with its secrets redacted (records of older bgbench held some):
    every string as text, every value under a secret name. Its resources' series, many
    samples of fixed fields, are redacted field by field (their strings, once each)."""
    figures = result.get(KEY)
    series = figures.pop("series", None) if isinstance(figures, dict) else None
    out = redact_strings(result)
    if isinstance(series, dict):
        out[KEY]["series"] = _redacted_series(series)
    return out


def _redacted_series(series: dict[str, Any]) -> dict[str, Any]:
    texts: dict[str, str] = {}
    secret: dict[str, bool] = {}

    def value(key: str, v: Any) -> Any:
        if key not in secret:
            secret[key] = is_secret_name(key)
        if secret[key]:
            return redact_value(key, redact_strings(v))
        if isinstance(v, str):
            if v not in texts:
                texts[v] = redact_text(v)
            return texts[v]
        if isinstance(v, dict):
            return {str(k): value(str(k), x) for k, x in v.items()}
        if v is None or isinstance(v, int | float):
            return v
        return redact_strings(v)

    return {
        value("stream", stream): [value("sample", s) for s in samples]
        if isinstance(samples, list)
        else []
        for stream, samples in series.items()
    }


def figures_of(result: Mapping[str, Any]) -> ResourceFigures | None:
    """An experiment's resource figures as its result recorded them (None: it has none, as
    a result from before they were measured)."""
    record = result.get(KEY)
    if record is None:
        return None
    if not isinstance(record, dict):
        raise TypeError(f"{KEY} is a JSON {type(record).__name__}, not an object")
    return ResourceFigures.from_record(record)


def bottleneck_columns(figures: ResourceFigures | None) -> dict[str, Any]:
    """The experiments frame's bottleneck columns (an experiment without figures: None)."""
    if figures is None:
        return {"bottleneck_kind": None, "bottleneck": None, "client_bound": None}
    b = figures.bottleneck
    return {"bottleneck_kind": b.kind, "bottleneck": b.text, "client_bound": b.client_bound}


def _share(used: float, capacity: float) -> float:
    return used / capacity if capacity > 0 else math.nan


def host_row(h: HostFigures) -> dict[str, Any]:
    row = {k: getattr(h, k) for k in HOST_FIGURES if hasattr(h, k)}
    row["cpu_share"] = _share(h.cpu_cores, h.cores)
    row["net_share"] = _share(max(h.net_rx_bytes_per_s, h.net_tx_bytes_per_s),
                              h.net_capacity_bytes_per_s)  # fmt: skip
    row["load_share"] = _share(h.load_cpu_cores + h.load_runqueue_cores, h.load_cores_allowed)
    store = h.store_cpu_cores + h.store_runqueue_cores
    row["store_share"] = _share(store, h.store_cores_allowed) if h.watches_store else math.nan
    return row


def resource_rows(e: Mapping[str, Any], figures: ResourceFigures | None) -> list[dict[str, Any]]:
    """An experiment's rows of the resources frame (`e`: its experiments-frame row)."""
    if figures is None:
        return []
    key = {k: e.get(k) for k in EXPERIMENT_KEYS}
    b = figures.bottleneck
    return [
        {**key, **host_row(h), "bottleneck_kind": b.kind, "bottleneck": b.text}
        for h in figures.hosts
    ]


def _group(name: str, g: GroupSample | None) -> dict[str, Any]:
    return {f"{name}_{f}": math.nan if g is None else getattr(g, f) for f in GROUP_FIGURES}


def sample_row(stream: str, s: HostSample, window: tuple[float, float]) -> dict[str, Any]:
    return {
        "stream": stream,
        "host_id": s.host_id,
        "host": s.host,
        "source": s.source,
        "elapsed_s": s.elapsed_s,
        "interval_s": s.interval_s,
        "rated": window[0] <= s.elapsed_s <= window[1],
        "cores": s.cores,
        "cpu_cores": s.cpu_cores,
        **{k: getattr(s, k) for k in SAMPLE_FIGURES[2:]},
        **_group("load", s.load),
        **_group("store", s.store),
    }


def series_frame(figures: ResourceFigures | None) -> pd.DataFrame:
    """Every sample of an experiment, by stream, in time order."""
    rows = []
    if figures is not None:
        for stream, samples in figures.series.items():
            rows += [sample_row(stream, s, figures.window_s) for s in samples]
    frame = pd.DataFrame(rows, columns=list(SERIES_COLUMNS))
    return frame.sort_values(["stream", "elapsed_s"], kind="stable").reset_index(drop=True)


def resources_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(RESOURCE_COLUMNS))


UNRATED = ("warmup", "retried")


def standing(experiments: Sequence[Mapping[str, Any]], threads: Any) -> Mapping[str, Any] | None:
    """The experiment that stands for a rating's outcome among its experiments (frame or
    store rows, in the order they ran), as coordinator/rating/bottleneck_of.py chooses it
    for the headline: the last final at `threads` (SoAR's T, else Socialites'); else the
    last run at that T; else the last rated one. Those that measured their resources
    first, when any did; never a warm-up, a retried attempt or a fault."""
    ran = [e for e in experiments if e.get("status") != "fault" and e.get("phase") not in UNRATED]
    measured = [e for e in ran if isinstance(e.get("bottleneck_kind"), str)]
    rows = measured or ran
    finals = [e for e in rows if e.get("phase") == "final" and e.get("threads") == threads]
    at_t = [e for e in rows if e.get("threads") == threads]
    for chosen in (finals, at_t, rows):
        if chosen:
            return chosen[-1]
    return None


def rating_bottleneck(
    summary: Mapping[str, Any], experiments: Sequence[Mapping[str, Any]], threads: Any
) -> dict[str, Any]:
    """A rating's bottleneck columns: its summary's when the summary names one (a finished
    rating), else those of the experiment that stands for it at `threads`."""
    named = summary.get("bottleneck")
    if isinstance(named, dict) and named.get("kind"):
        return {
            "bottleneck_kind": str(named["kind"]),
            "bottleneck": str(named.get("text", "")),
            "client_bound": bool(named.get("client_bound", named["kind"] == "client")),
        }
    e = standing(experiments, threads)
    if e is None:
        return {c: None for c in BOTTLENECK_COLUMNS}
    return {c: e.get(c) for c in BOTTLENECK_COLUMNS}
