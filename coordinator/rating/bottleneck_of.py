"""The bottleneck a rating's headline names: its final experiment's, as recorded.

The final experiment is the last final run at SoAR's T (Socialites' when the rating
searched only that); lacking one (the classic search keeps its finals as search runs, a
sweep has none, SoAR 0 ran no final), the last run at that T, then the last experiment
that measured its resources. Warm-ups and runs a fault ended are not rated: never named.
"""

import json
from dataclasses import fields
from typing import Any

from bgbench.resources.model import Bottleneck

UNRATED = ("warmup", "retried")


def final_bottleneck(rows: list[dict[str, Any]], threads: int | None) -> Bottleneck | None:
    """The bottleneck of the final experiment at `threads` (SoAR's T, else Socialites')
    among the rating's recorded `rows` (None: no rated experiment measured its
    resources)."""
    measured = [(row, b) for row in rows if (b := _bottleneck(row)) is not None]
    if not measured:
        return None
    finals = [b for row, b in measured if row["phase"] == "final" and row["threads"] == threads]
    at_t = [b for row, b in measured if row["threads"] == threads]
    return (finals or at_t or [b for _, b in measured])[-1]


def _bottleneck(row: dict[str, Any]) -> Bottleneck | None:
    if row.get("phase") in UNRATED or row.get("status") == "fault":
        return None
    try:
        data = json.loads(row["result_json"])
    except (KeyError, TypeError, ValueError):
        return None
    resources = data.get("resources") if isinstance(data, dict) else None
    found = resources.get("bottleneck") if isinstance(resources, dict) else None
    return bottleneck_of(found) if isinstance(found, dict) else None


def bottleneck_of(data: dict[str, Any]) -> Bottleneck:
    """A Bottleneck from its record (keys it does not know are left)."""
    names = {f.name for f in fields(Bottleneck)}
    return Bottleneck(**{k: v for k, v in data.items() if k in names})
