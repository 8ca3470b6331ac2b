"""The visibility of acknowledged writes, per action and item kind (validation/visibility.py):
as an agent reported it, and over all agents."""

from dataclasses import dataclass, field
from typing import Any

from bgbench.protos import new_histogram
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result.histograms import LatencySummary, decode


@dataclass
class WriteVisibility:
    """Acknowledged writes of one action to one item kind. `visible` summarises `hist`: the
    time from each write's end until every later read of its item included it (0: at its
    end), over the writes some read saw; `never`: the item's latest read still missed it;
    `unread`: no read of the item started after it ended."""

    action: str
    item: str
    writes: int = 0
    never: int = 0
    unread: int = 0
    hist: str = ""  # HDR histogram (us), base64: exact merging later
    visible: LatencySummary = field(default_factory=LatencySummary.empty)

    @classmethod
    def of_reply(cls, rows: list[pb.WriteVisibility]) -> list["WriteVisibility"]:
        out = []
        for r in rows:
            h = decode(r.hist)
            out.append(cls(r.action, r.item, r.writes, r.never, r.unread,
                           h.encode().decode(), LatencySummary.of(h)))  # fmt: skip
        return out

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "WriteVisibility":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        visible = known.pop("visible", None)
        row = cls(**known)
        if isinstance(visible, dict):
            row.visible = LatencySummary(**visible)
        return row


def merge_visibility(parts: list[list[WriteVisibility]]) -> list[WriteVisibility]:
    """Rows of the same action and item kind added, histograms merged exactly, summarised;
    in the order they first appear."""
    total: dict[tuple[str, str], WriteVisibility] = {}
    hists: dict[tuple[str, str], Any] = {}
    for part in parts:
        for row in part:
            key = (row.action, row.item)
            t = total.setdefault(key, WriteVisibility(row.action, row.item))
            t.writes += row.writes
            t.never += row.never
            t.unread += row.unread
            hists.setdefault(key, new_histogram()).add(decode(row.hist.encode()))
    for key, t in total.items():
        t.hist = hists[key].encode().decode()
        t.visible = LatencySummary.of(hists[key])
    return list(total.values())


def visibility_totals(rows: list[WriteVisibility]) -> dict[str, Any]:
    """Over every action and item kind: writes, never, unread and the summary."""
    merged = merge_visibility([[WriteVisibility("", "", r.writes, r.never, r.unread, r.hist)
                                for r in rows]])  # fmt: skip
    if not merged:
        return {"writes": 0, "never": 0, "unread": 0, "visible": LatencySummary.empty()}
    m = merged[0]
    return {"writes": m.writes, "never": m.never, "unread": m.unread, "visible": m.visible}
