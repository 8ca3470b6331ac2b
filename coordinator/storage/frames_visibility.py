"""The write-visibility frame of a rating: what each experiment recorded of when its
acknowledged writes became visible (ExperimentResult.visibility under the key "visibility"
of its result JSON; validation/visibility.py defines the figures).

visibility_frame(frames, rating_id) (one row per experiment x action x item kind that wrote)
    rating_id, seq, phase, threads, action, item, writes, seen (writes some later read
    saw), never (the latest read of their item still missed them), unread (no read of their
    item after them), p50_ms, p95_ms, p99_ms, max_ms (visibility time of the seen writes),
    hist (HDR histogram, us, base64: merge rows exactly with visibility_histogram).
"""

from collections.abc import Iterable
from typing import Any, Protocol

import pandas as pd
from hdrh.histogram import HdrHistogram

from bgbench.protos import new_histogram
from bgbench.run_result.histograms import decode

COLUMNS = ("rating_id", "seq", "phase", "threads", "action", "item", "writes", "seen",
           "never", "unread", "p50_ms", "p95_ms", "p99_ms", "max_ms", "hist")  # fmt: skip


class Frames(Protocol):
    """What the frame is read from (frames.ResultFrames)."""

    @property
    def experiments(self) -> pd.DataFrame: ...

    def of_rating(self, frame: pd.DataFrame, rating_id: str) -> pd.DataFrame: ...
    def result(self, rating_id: str, seq: int) -> dict[str, Any]: ...


def visibility_frame(frames: Frames, rating_id: str) -> pd.DataFrame:
    rows = []
    for _, e in frames.of_rating(frames.experiments, rating_id).iterrows():
        result = frames.result(rating_id, int(e["seq"]))
        for v in result.get("visibility") or []:
            seen = v.get("visible") or {}
            rows.append({
                "rating_id": rating_id, "seq": int(e["seq"]), "phase": e["phase"],
                "threads": int(e["threads"]), "action": v["action"], "item": v["item"],
                "writes": v["writes"], "seen": seen.get("count", 0), "never": v["never"],
                "unread": v["unread"], "p50_ms": seen.get("p50_ms"),
                "p95_ms": seen.get("p95_ms"), "p99_ms": seen.get("p99_ms"),
                "max_ms": seen.get("max_ms"), "hist": v.get("hist", ""),
            })  # fmt: skip
    return pd.DataFrame(rows, columns=list(COLUMNS))


def visibility_histogram(hists: Iterable[str]) -> HdrHistogram:
    """The rows' histograms merged (exact)."""
    merged = new_histogram()
    for text in hists:
        if text:
            merged.add(decode(text.encode()))
    return merged
