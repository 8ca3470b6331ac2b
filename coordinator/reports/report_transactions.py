"""The console's transactions table (rich): per interaction that ran transactions, its
commits, refused attempts by cause, retries and back-off per commit, and those that gave
up or ended unknown (run_result/transactions.py derives the figures)."""

from collections.abc import Mapping

from rich.table import Table

from bgbench.run_result import ExperimentResult, TransactionFigures

COLUMNS = ("action", "commits", "conflict", "deadlock", "lock timeout", "retries/commit",
           "back-off ms/commit", "gave up", "unknown")  # fmt: skip


def of_result(result: ExperimentResult) -> dict[str, TransactionFigures]:
    """Per action of an experiment that ran transactions, their figures."""
    return {a.action: a.transactions for a in result.per_action if a.transactions is not None}


def transactions_table(
    figures: Mapping[str, TransactionFigures], titles: Mapping[str, str]
) -> Table | None:
    """The table of `figures` (per action name); None when no action ran a transaction."""
    if not figures:
        return None
    table = Table(
        title="transactions (aborts: attempts the store refused, by cause)", title_justify="left"
    )
    for col in COLUMNS:
        table.add_column(col, justify="left" if col == "action" else "right")
    for action, f in figures.items():
        table.add_row(
            f"{action} {titles.get(action, '')}".rstrip(),
            f"{f.commits:,}",
            f"{f.aborts_conflict:,}",
            f"{f.aborts_deadlock:,}",
            f"{f.aborts_lock_timeout:,}",
            _per(f.retries_per_commit, "{:.3f}"),
            _per(f.backoff_ms_per_commit, "{:.2f}"),
            f"{f.gave_up:,}",
            f"{f.unknown:,}",
        )
    return table


def _per(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)
