"""The report's Resources section of a rating or a run: what bound each experiment, each
resource's utilisation against T, and the hosts of the experiment that stands for the
rating over time (coordinator/reports/charts_resources.py).

Every text from the samples (host names, how the store was found, the bottleneck's line)
reaches the page through Page.text/table/figure, which escape it.
"""

from typing import Any, Protocol

import pandas as pd
from matplotlib.figure import Figure

from bgbench.coordinator.reports import charts, charts_resources
from bgbench.coordinator.reports.compare import said_true
from bgbench.coordinator.storage.frames import ResultFrames
from bgbench.coordinator.storage.frames_resources import standing


class Page(Protocol):
    """What this section writes to (html_report.Page)."""

    def heading(self, text: str, anchor: str = "", level: int = 2) -> None: ...
    def text(self, text: str, css: str = "") -> None: ...
    def table(self, frame: pd.DataFrame) -> None: ...
    def figure(self, ident: str, fig: Figure | None, caption: str) -> None: ...


BOUND_TABLE = {"seq": "#", "phase": "phase", "threads": "T", "status": "verdict",
               "actions_per_s": "actions/s", "bottleneck": "bottleneck"}  # fmt: skip


def bottleneck_line(r: "pd.Series[Any]") -> tuple[str, str] | None:
    """The headline's line of a rating's (or an experiment's) bottleneck and its css class,
    None when its resources were not recorded. A client-bound one is said loudly."""
    text = r.get("bottleneck")
    if not isinstance(text, str) or not text:
        return None
    if said_true(r.get("client_bound")):
        return (f"CLIENT-BOUND: {text}. The client, not the store, set this limit: "
                "the figures understate the store.", "failed")  # fmt: skip
    return f"Bottleneck: {text}", ""


def resource_sections(
    frames: ResultFrames, rating_id: str, page: Page, prefix: str, x: charts.XAxis
) -> None:
    """The Resources section; nothing when the rating's experiments recorded none."""
    exps = frames.of_rating(frames.experiments, rating_id)
    hosts = frames.of_rating(frames.resources, rating_id)
    if exps.empty or exps["bottleneck"].isna().all():
        return
    page.heading("Resources")
    page.text("What bound each experiment: the resource nearest saturation on the store's "
              "and the agents' hosts (its share of capacity), or none.")  # fmt: skip
    if exps["threads"].nunique() > 1 or exps["target_rate"].nunique() > 1:
        page.figure(prefix + "utilisation", charts_resources.utilisation(hosts, exps, x),
                    f"Each resource's share of its capacity against {x.short} (mean of the "
                    "rated experiments at each): server CPU and the load processes' CPU as "
                    "demand (CPU plus run-queue wait) over the cores they may use; host CPU, "
                    "disk busy time; network over the link's speed where it is known. "
                    "1 is saturation.")  # fmt: skip
    rows = [{str(k): v for k, v in row.items()} for _, row in exps.iterrows()]
    r = frames.rating(rating_id)
    at = r["soar_threads"] if pd.notna(r["soar_threads"]) else r["socialites"]
    e = standing(rows, at if pd.notna(at) else None)
    if e is not None:
        seq = int(e["seq"])
        series = frames.resource_series(rating_id, seq)
        title = f"Hosts over experiment {seq} ({e['phase']}, T={e['threads']})"
        page.figure(prefix + "resources-timeline", charts_resources.timeline(series, title),
                    f"Experiment {seq}, the one that stands for the outcome: busy cores of "
                    "each host and of the store's and the load processes; disk busy share; "
                    "network. Shaded: outside the rated window (the warm-up cut, the "
                    "end).")  # fmt: skip
        mine = hosts[hosts["seq"] == seq]
        if not mine.empty:
            page.text(f"Hosts of experiment {seq}, means over its rated window.")
            page.table(charts_resources.host_table(mine))
    page.table(exps[list(BOUND_TABLE)].rename(columns=BOUND_TABLE))
    notes = [n for n in _notes(frames, rating_id, exps) if n]
    for note in notes[:20]:
        page.text(note)


def _notes(frames: ResultFrames, rating_id: str, exps: pd.DataFrame) -> list[str]:
    """What the sampling noted (scrapes that failed...), once each, of the rated ones."""
    seen: dict[str, None] = {}
    for seq in charts.rated(exps)["seq"]:
        resources = frames.result(rating_id, int(seq)).get("resources") or {}
        for note in resources.get("notes") or []:
            seen.setdefault(f"Note: {note}", None)
    return list(seen)
