"""The transactions a rating's summary shows: its final experiment's, per interaction, as
recorded (the experiment final_bottleneck names the bottleneck of)."""

import json
from typing import Any

from bgbench.coordinator.rating.bottleneck_of import UNRATED
from bgbench.run_result import TransactionFigures


def final_transactions(
    rows: list[dict[str, Any]], threads: int | None
) -> dict[str, TransactionFigures]:
    """Per interaction that ran transactions, the figures of the final experiment at
    `threads` (SoAR's T, else Socialites'), else the last rated one at that T, else the
    last rated one; empty when none ran a transaction."""
    rated = [r for r in rows if r.get("phase") not in UNRATED and r.get("status") != "fault"]
    finals = [r for r in rated if r["phase"] == "final" and r["threads"] == threads]
    at_t = [r for r in rated if r["threads"] == threads]
    chosen = (finals or at_t or rated)[-1:]
    return per_action_transactions(chosen[0]["result_json"]) if chosen else {}


def per_action_transactions(result_json: str) -> dict[str, TransactionFigures]:
    """Per action of a recorded result, its transactions (actions without tallies, and a
    record that does not hold what bgbench writes, give none)."""
    try:
        data = json.loads(result_json)
    except (TypeError, ValueError, RecursionError):
        return {}
    actions = data.get("per_action") if isinstance(data, dict) else None
    out: dict[str, TransactionFigures] = {}
    for a in actions if isinstance(actions, list) else []:
        counts = a.get("counts") if isinstance(a, dict) else None
        if not isinstance(counts, dict) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in counts.values()
        ):
            continue
        figures = TransactionFigures.of(counts)
        if figures is not None:
            out[str(a.get("action", ""))] = figures
    return out
