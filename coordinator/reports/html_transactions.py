"""The report's Transactions section: per interaction that ran transactions (its action
has tallies), commits, refused attempts by cause, retries and back-off per commit, and
the transactions that gave up or ended unknown, for the experiments that stand for
each T (run_result/transactions.py derives the figures)."""

from typing import Any, Protocol

import pandas as pd

from bgbench.run_result.rows import TRANSACTION_COLUMNS
from bgbench.run_result.transactions import per_commit


class Page(Protocol):
    """What this section writes to (html_report.Page)."""

    def heading(self, text: str, anchor: str = "", level: int = 2) -> None: ...
    def text(self, text: str, css: str = "") -> None: ...
    def table(self, frame: pd.DataFrame) -> None: ...


TRANSACTION_TABLE = {
    "threads": "T", "action": "action", "title": "title", "commits": "commits",
    "aborts_conflict": "aborts: conflict", "aborts_deadlock": "aborts: deadlock",
    "aborts_lock_timeout": "aborts: lock timeout", "retries_per_commit": "retries per commit",
    "backoff_ms_per_commit": "back-off ms per commit", "gave_up": "gave up",
    "unknown": "unknown",
}  # fmt: skip
SUMMED = [c for c in TRANSACTION_COLUMNS if not c.endswith("_per_commit")]


def transaction_section(actions: pd.DataFrame, page: Page, prefix: str = "") -> None:
    """`actions`: the per_action rows of the experiments that stand for each T. Nothing
    when no action ran a transaction."""
    if actions.empty or "commits" not in actions or actions["commits"].isna().all():
        return
    rows = actions[actions["commits"].notna()]
    pooled = rows.groupby(["threads", "action", "title"], sort=False, as_index=False)[SUMMED].sum()
    for name in SUMMED:
        if name != "backoff_ms":
            pooled[name] = pooled[name].astype("int64")
    for name, amount in (
        ("retries_per_commit", "retries"),
        ("backoff_ms_per_commit", "backoff_ms"),
    ):
        pooled[name] = [
            _or_nan(per_commit(a, int(c)))
            for a, c in zip(pooled[amount], pooled["commits"], strict=True)
        ]
    page.heading("Transactions", prefix + "transactions")
    page.text(
        "Per interaction that ran transactions: commits; attempts the store refused, by "
        "cause; retries (attempts beyond the first) and time spent backing off, per "
        "committed transaction; transactions that gave up after every attempt the retry "
        "policy allows (nothing applied) and those whose outcome is unknown (an attempt "
        "failed otherwise: it may have applied). Counts summed over the experiments at each T."
    )
    page.table(pooled[list(TRANSACTION_TABLE)].rename(columns=TRANSACTION_TABLE))


def _or_nan(value: Any) -> float:
    return float("nan") if value is None else float(value)
