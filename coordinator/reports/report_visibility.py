"""The console's table of when acknowledged writes became visible, per action and item kind
(validation/visibility.py), for an experiment and for `bgbench validate`."""

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table


def _ms(v: float | None) -> str:
    return "" if v is None else f"{v:,.3f}"


def visibility_table(rows: Sequence[Mapping[str, Any]]) -> list[Table]:
    """One table (none when nothing was written): rows as `validate --json` or a stored
    result give them (action, item, writes, never, unread, visible: count and ms)."""
    if not rows:
        return []
    table = Table(
        title="write visibility: time from a write's end until every later read of its item "
        "included it",
        title_justify="left",
    )
    heads = ("action", "item kind", "writes", "seen", "p50 ms", "p95 ms", "p99 ms", "max ms",
             "never visible", "unread")  # fmt: skip
    for head in heads:
        table.add_column(head, justify="left" if head in ("action", "item kind") else "right")
    for r in rows:
        v = r["visible"]
        seen = v["count"]
        table.add_row(
            str(r["action"]), str(r["item"]), f"{r['writes']:,}", f"{seen:,}",
            *(_ms(v[k] if seen else None) for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms")),
            f"{r['never']:,}", f"{r['unread']:,}",
        )  # fmt: skip
    return [table]
