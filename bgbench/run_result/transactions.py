"""An interaction's transactions over a run, from its tallies (ActionStats.counts): the
one place the figures people read are derived (retries and back-off per commit), for the
JSON results, the results store's frames, the HTML report, the console and comparisons.

The tallies are named as sdk/transactions.py names them (its TALLIES; this layer does
not import the SDK, and a test holds the two lists equal).
"""

from collections.abc import Mapping
from dataclasses import dataclass

ABORT_CAUSES = ("conflict", "deadlock", "lock_timeout")
TALLIES = (
    "commits", "retries", *(f"aborts_{c}" for c in ABORT_CAUSES), "gave_up", "unknown",
    "backoff_us",
)  # fmt: skip


def per_commit(amount: float, commits: int) -> float | None:
    """`amount` (retries, back-off ms) per committed transaction; None without a commit."""
    return amount / commits if commits else None


@dataclass(frozen=True)
class TransactionFigures:
    """Committed transactions; refused attempts by cause; retries (attempts beyond the
    first, of committed transactions); transactions that gave up (every attempt refused:
    nothing applied) or ended unknown (an attempt raised: it may have applied); time spent
    backing off between attempts, and per commit (None without a commit)."""

    commits: int
    aborts_conflict: int
    aborts_deadlock: int
    aborts_lock_timeout: int
    retries: int
    gave_up: int
    unknown: int
    backoff_ms: float
    retries_per_commit: float | None
    backoff_ms_per_commit: float | None

    @classmethod
    def of(cls, counts: Mapping[str, int]) -> "TransactionFigures | None":
        """The figures of an action's tallies; None for an action that is no transaction
        (no tallies)."""
        if not counts:
            return None
        commits = counts.get("commits", 0)
        retries = counts.get("retries", 0)
        backoff_ms = counts.get("backoff_us", 0) / 1000.0
        return cls(
            commits=commits,
            aborts_conflict=counts.get("aborts_conflict", 0),
            aborts_deadlock=counts.get("aborts_deadlock", 0),
            aborts_lock_timeout=counts.get("aborts_lock_timeout", 0),
            retries=retries,
            gave_up=counts.get("gave_up", 0),
            unknown=counts.get("unknown", 0),
            backoff_ms=backoff_ms,
            retries_per_commit=per_commit(retries, commits),
            backoff_ms_per_commit=per_commit(backoff_ms, commits),
        )

    @property
    def aborts(self) -> int:
        """Refused attempts, every cause."""
        return self.aborts_conflict + self.aborts_deadlock + self.aborts_lock_timeout
