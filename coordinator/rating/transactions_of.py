"""The transactions a rating's summary shows, per interaction: those of its final
experiment (its runs pooled), as recorded."""

import json
from typing import Any

from bgbench.coordinator.rating.bottleneck_of import UNRATED
from bgbench.run_result import TransactionFigures


def final_transactions(
    rows: list[dict[str, Any]], threads: int | None
) -> dict[str, TransactionFigures]:
    """Per interaction that ran transactions, the figures of the final experiments at
    `threads` (SoAR's T, else Socialites'; a final's runs pooled), else of the last rated
    one at that T, else of the last rated one; empty when none ran a transaction."""
    rated = [r for r in rows if r.get("phase") not in UNRATED and r.get("status") != "fault"]
    finals = [r for r in rated if r["phase"] == "final" and r["threads"] == threads]
    at_t = [r for r in rated if r["threads"] == threads]
    chosen = finals or (at_t or rated)[-1:]
    pooled: dict[str, dict[str, int]] = {}
    for row in chosen:
        for action, counts in per_action_counts(row["result_json"]).items():
            into = pooled.setdefault(action, {})
            for name, n in counts.items():
                into[name] = into.get(name, 0) + n
    return {a: f for a, counts in pooled.items() if (f := TransactionFigures.of(counts))}


def per_action_counts(result_json: str) -> dict[str, dict[str, int]]:
    """Per action of a recorded result, its transaction tallies (actions without, and a
    record that does not hold what bgbench writes, give none)."""
    try:
        data = json.loads(result_json)
    except (TypeError, ValueError, RecursionError):
        return {}
    actions = data.get("per_action") if isinstance(data, dict) else None
    out: dict[str, dict[str, int]] = {}
    for a in actions if isinstance(actions, list) else []:
        counts = a.get("counts") if isinstance(a, dict) else None
        if (
            isinstance(counts, dict)
            and counts
            and all(isinstance(n, int) and not isinstance(n, bool) for n in counts.values())
        ):
            out[str(a.get("action", ""))] = {str(k): n for k, n in counts.items()}
    return out
