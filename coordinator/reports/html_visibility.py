"""The report's Write visibility section: per T (the experiments that stand for it), per
action and item kind that wrote, when the acknowledged writes became visible to every later
read (validation/visibility.py), next to the staleness lag of the unpredictable reads."""

from typing import Any, Protocol

import pandas as pd
from matplotlib.figure import Figure

from bgbench.coordinator.reports import charts
from bgbench.coordinator.storage.frames_visibility import (
    Frames,
    visibility_frame,
    visibility_histogram,
)
from bgbench.run_result.histograms import LatencySummary

TABLE = {
    "threads": "T", "action": "action", "item": "item kind", "writes": "writes",
    "seen": "seen", "p50_ms": "p50 ms", "p95_ms": "p95 ms", "p99_ms": "p99 ms",
    "max_ms": "max ms", "never": "never visible", "unread": "unread",
}  # fmt: skip


class Page(Protocol):
    """What this section writes to (html_report.Page)."""

    def heading(self, text: str, anchor: str = "", level: int = 2) -> None: ...
    def text(self, text: str, css: str = "") -> None: ...
    def table(self, frame: pd.DataFrame) -> None: ...
    def figure(self, ident: str, fig: Figure | None, caption: str, wide: bool = False) -> None: ...


def visibility_section(
    frames: Frames, rating_id: str, standing: pd.DataFrame, page: Page, prefix: str = ""
) -> None:
    """`standing`: the experiments that stand for each T. Nothing when none recorded any
    write visibility (no writes, or records older than it)."""
    rows = visibility_frame(frames, rating_id)
    rows = rows[rows["seq"].isin(set(standing["seq"]))]
    if rows.empty:
        return
    pooled = []
    for (t, action, item), group in rows.groupby(["threads", "action", "item"], sort=False):
        s = LatencySummary.of(visibility_histogram(group["hist"]))
        pooled.append({
            "threads": t, "action": action, "item": item, "writes": int(group["writes"].sum()),
            "seen": s.count, "p50_ms": s.p50_ms, "p95_ms": s.p95_ms, "p99_ms": s.p99_ms,
            "max_ms": s.max_ms, "never": int(group["never"].sum()),
            "unread": int(group["unread"].sum()),
        })  # fmt: skip
    page.heading("Write visibility", prefix + "visibility")
    page.text(
        "For each acknowledged write: the time from its end until every read of its item that "
        "started later returned a value including it (0: visible at its end), over the "
        "writes some later read saw; 'never visible': the item's latest read still missed "
        "it; 'unread': no read of its item started after it. Per T (its finals where the "
        "rating ran them), per action and item kind; percentiles from the merged HDR "
        "histograms. The staleness lag above measures the reads; this measures the writes."
    )
    page.table(pd.DataFrame(pooled)[list(TABLE)].rename(columns=TABLE))
    named = _distributions(rows)
    if named:
        page.figure(prefix + "visibility-histogram",
                    charts.histograms(named, "Write visibility time", True),
                    "Visibility time of the writes some later read saw, per action and item "
                    "kind, over the experiments that stand for each T (0 ms not drawn on the "
                    "log axis: see the table).")  # fmt: skip


def _distributions(rows: pd.DataFrame) -> list[tuple[str, Any]]:
    named = []
    for (action, item), group in rows.groupby(["action", "item"], sort=False):
        h = visibility_histogram(group["hist"])
        if h.get_max_value() > 0:
            named.append((f"{action} / {item}", h))
    return named
