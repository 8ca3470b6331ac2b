"""An experiment's stored result as rows of the DataFrames (coordinator/storage/frames.py).

The rows are read from the result's JSON as the results store holds it, any bgbench's:
a figure an older record lacks is NaN, None or its default, as the columns say.
"""

import math
from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any

from hdrh.histogram import HdrHistogram

from bgbench.protos import new_histogram
from bgbench.run_result.histograms import LatencySummary, decode
from bgbench.run_result.transactions import TransactionFigures

EXPERIMENT_COLUMNS = (
    "rating_id", "seq", "experiment_id", "phase", "threads", "target_rate", "duration_s",
    "elapsed_s", "status", "passed", "actions_per_s", "actions_per_s_low",
    "actions_per_s_high", "within_percent", "unpredictable_percent", "actions", "errors",
    "reads", "unpredictable_reads", "never_valid", "p50_ms", "p95_ms", "p99_ms", "max_ms",
    "mean_ms", "lag_count", "lag_p50_ms", "lag_p95_ms", "lag_p99_ms", "lag_max_ms",
    "warmup_s", "stable", "store_description", "reasons", "fault", "created",
)  # fmt: skip
AGENT_COLUMNS = (
    "rating_id", "seq", "threads", "agent", "agent_threads", "throughput", "actions", "errors",
    "within_percent", "session_within_percent", "reads", "unpredictable_reads",
    "unpredictable_percent", "never_valid", "cpu_percent", "load_processes", "saturated",
    "passed", "reasons", "p50_ms", "p95_ms", "p99_ms",
)  # fmt: skip
# An action's transactions (None where it is no transaction): TransactionFigures' fields
TRANSACTION_COLUMNS = tuple(f.name for f in fields(TransactionFigures))
ACTION_COLUMNS = (
    "rating_id", "seq", "threads", "action", "title", "count", "errors", "within_percent",
    "p50_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms", "service_p50_ms", "service_p95_ms",
    "service_p99_ms", *TRANSACTION_COLUMNS,
)  # fmt: skip
VALIDATION_COLUMNS = ("rating_id", "seq", "threads", "kind", "name", "reads", "unpredictable")
LAG_KEYS = ("p50_ms", "p95_ms", "p99_ms", "max_ms")
LATENCY_KEYS = ("p50_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms")

Row = dict[str, Any]


def response_histogram(result: Mapping[str, Any]) -> HdrHistogram | None:
    """The experiment's response times, its agents' HDR histograms merged (None: the
    result has none, as the model store's)."""
    encoded = [a["response_hist"] for a in result.get("agents", []) if a.get("response_hist")]
    if not encoded:
        return None
    merged = new_histogram()
    for text in encoded:
        merged.add(decode(text.encode()))
    return merged


def lag_histogram(result: Mapping[str, Any]) -> HdrHistogram | None:
    """The staleness lag (us) of the experiment's unpredictable reads, merged over agents."""
    merged = new_histogram()
    for a in result.get("agents", []):
        if a.get("lag_hist"):
            merged.add(decode(a["lag_hist"].encode()))
    return merged if merged.get_total_count() else None


def latency(h: HdrHistogram | None, recorded: Mapping[str, Any] | None) -> dict[str, float]:
    if h is not None:
        s = LatencySummary.of(h)
        return {"p50_ms": s.p50_ms, "p95_ms": s.p95_ms, "p99_ms": s.p99_ms,
                "max_ms": s.max_ms, "mean_ms": s.mean_ms}  # fmt: skip
    r = recorded or {}
    return {k: r[k] if r.get("count") else math.nan for k in LATENCY_KEYS}


def experiment_rows(
    e: Mapping[str, Any],
    result: Mapping[str, Any],
    interval: tuple[float, float],
    titles: Mapping[str, str],
) -> tuple[Row, list[Row], list[Row], list[Row]]:
    """An experiment's row (`e`: its results-store row, `result`: its result_json, the
    throughput's interval), and its rows of per_agent, per_action and validation."""
    key = {"rating_id": e["rating_id"], "seq": e["seq"], "threads": e["threads"]}
    agents = [agent_row(key, a) for a in result.get("agents", [])]
    actions = [action_row(key, a, titles) for a in result["per_action"]]
    valid = []
    for kind in ("item", "action"):
        for name, f in (result.get(f"by_{kind}") or {}).items():
            valid.append({**key, "kind": kind, "name": name, **f})
    return experiment_row(e, result, interval), agents, actions, valid


def experiment_row(
    e: Mapping[str, Any], result: Mapping[str, Any], interval: tuple[float, float]
) -> Row:
    lag = result.get("lag") or {}
    steady = result.get("steady") or {}
    return {
        "rating_id": e["rating_id"],
        "seq": e["seq"],
        "experiment_id": result.get("experiment_id", ""),
        "phase": e["phase"],
        "threads": e["threads"],
        "target_rate": result.get("target_rate") or math.nan,
        "duration_s": e["duration_s"],
        "elapsed_s": result.get("elapsed_s"),
        "status": e["status"],
        "passed": e["status"] == "passed",
        "actions_per_s": e["actions_per_s"],
        "actions_per_s_low": interval[0],
        "actions_per_s_high": interval[1],
        "within_percent": e["within_percent"],
        "unpredictable_percent": e["unpredictable_percent"],
        "actions": result.get("actions"),
        "errors": result.get("errors"),
        "reads": result.get("reads"),
        "unpredictable_reads": result.get("unpredictable_reads"),
        "never_valid": result.get("never_valid", 0),
        **latency(response_histogram(result), result.get("overall")),
        "lag_count": lag.get("count", 0),
        **{f"lag_{k}": lag.get(k) if lag.get("count") else math.nan for k in LAG_KEYS},
        "warmup_s": steady.get("warmup_s", 0.0),
        "stable": steady.get("stable", True),
        "store_description": result.get("store", ""),
        "reasons": e["reasons"],
        "fault": result.get("fault", ""),
        "created": e["created"],
    }


def agent_row(key: Mapping[str, Any], a: Mapping[str, Any]) -> Row:
    h = decode(a["response_hist"].encode()) if a.get("response_hist") else None
    figures = latency(h, None)
    reads = a.get("reads", 0)
    elapsed = a.get("elapsed_s") or 0.0
    return {
        **key,
        "agent": a["address"],
        "agent_threads": a["threads"],
        "throughput": a["actions"] / elapsed if elapsed else math.nan,
        "actions": a["actions"],
        "errors": a["errors"],
        "within_percent": a["within_percent"],
        "session_within_percent": a.get("session_within_percent"),
        "reads": reads,
        "unpredictable_reads": a.get("unpredictable_reads", 0),
        "unpredictable_percent": 100.0 * a.get("unpredictable_reads", 0) / reads if reads else 0.0,
        "never_valid": a.get("never_valid", 0),
        "cpu_percent": a.get("cpu_percent"),
        "load_processes": a.get("load_processes"),
        "saturated": a.get("saturated", False),
        "passed": a.get("passed", False),
        "reasons": "; ".join(a.get("reasons", [])),
        "p50_ms": figures["p50_ms"],
        "p95_ms": figures["p95_ms"],
        "p99_ms": figures["p99_ms"],
    }


def action_row(key: Mapping[str, Any], a: Mapping[str, Any], titles: Mapping[str, str]) -> Row:
    r, s = a["response"], a["service"]
    return {
        **key,
        "action": a["action"],
        "title": titles.get(a["action"], a["action"]),
        "count": a["count"],
        "errors": a["errors"],
        "within_percent": a["within_percent"],
        **{k: r[k] for k in LATENCY_KEYS},
        "service_p50_ms": s["p50_ms"],
        "service_p95_ms": s["p95_ms"],
        "service_p99_ms": s["p99_ms"],
        **transaction_figures(a.get("counts") or {}),
    }


def transaction_figures(counts: Mapping[str, int]) -> Row:
    """An action's transaction columns from its stored tallies (None: no transaction)."""
    figures = TransactionFigures.of(counts)
    if figures is None:
        return dict.fromkeys(TRANSACTION_COLUMNS)
    return asdict(figures)
