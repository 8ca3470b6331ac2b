"""Transactions with a retry policy: what a transactional workload's units play.

A store binding runs one attempt of a transaction (Strudel's entity-group transaction:
one group key, several reads and writes) the way it chooses: optimistic (read a version,
buffer, compare-and-set at commit) or pessimistic (locks, the store's own multi-statement
transaction). An attempt the store refused raises `Abort(cause)`: nothing of it applied.
Any other exception leaves the outcome unknown.

`ctx.transaction(code, attempt, policy, ...)` (timing.UnitContext) plays attempts until
one commits or the policy's attempts run out, backing off between them through the
engine's think (so a stopping experiment ends the wait). It logs ONE action: response
time from the intended start to the commit, retries and back-off included. The committed
attempt's reads and writes are logged over that attempt's own interval. It tallies, per
action, through `Recorder.tally`: COMMITS, RETRIES (attempts beyond the first, of
committed transactions), ABORTS_<cause> (every refused attempt), GAVE_UP (transactions
whose every attempt was refused), UNKNOWN (an attempt raised something else) and
BACKOFF_US (time spent waiting between attempts).

The retry policy is a setting (a pydantic model a workload puts in its settings), never
code: attempts, base delay, cap, multiplier and jitter.
"""

import random
from typing import Annotated, Generic, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field

R = TypeVar("R")

AbortCause = Literal["conflict", "deadlock", "lock_timeout"]
ConcurrencyControl = Literal["optimistic", "pessimistic"]
ABORT_CAUSES: tuple[AbortCause, ...] = ("conflict", "deadlock", "lock_timeout")

# Tally names (Recorder.tally), per action
COMMITS = "commits"
RETRIES = "retries"
GAVE_UP = "gave_up"
UNKNOWN = "unknown"
BACKOFF_US = "backoff_us"
ABORTS = {cause: f"aborts_{cause}" for cause in ABORT_CAUSES}
TALLIES = (COMMITS, RETRIES, *ABORTS.values(), GAVE_UP, UNKNOWN, BACKOFF_US)

# What ctx.transaction returns as its status
COMMITTED = "committed"
ABORTED = "aborted"  # every attempt refused: nothing applied
FAILED = "unknown"  # an attempt raised: it may or may not have applied
STOPPED = "stopped"  # the experiment stopped during a back-off: nothing applied, no action


class Abort(Exception):
    """The store refused this attempt of a transaction; nothing of it applied."""

    def __init__(self, cause: AbortCause, detail: str = "") -> None:
        super().__init__(f"{cause}: {detail}" if detail else cause)
        self.cause: AbortCause = cause


class RetryPolicy(BaseModel):
    """How a transaction the store refused is tried again: `attempts` in all (the first
    included), waiting min(cap, base * multiplier^(retry - 1)) ms before each retry, with
    jitter: "full" draws the wait uniformly from [0, that], "equal" from [that/2, that],
    "none" waits exactly that."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    # Strudel retries until a transaction commits. 100 tries with the default back-off
    # wait at most about 10 s in all; a transaction that still gave up is a failed action
    # (and any failed action fails the SLA), so a low bound is a deliberate choice.
    attempts: Annotated[
        int, Field(ge=1, le=1000, description="tries in all, the first included")
    ] = 100
    base_ms: Annotated[float, Field(ge=0, le=60_000, description="the first back-off, ms")] = 1.0
    cap_ms: Annotated[float, Field(ge=0, le=600_000, description="the longest back-off, ms")] = (
        100.0
    )
    multiplier: Annotated[float, Field(ge=1, le=16, description="growth per retry")] = 2.0
    jitter: Literal["full", "equal", "none"] = "full"

    def delay_s(self, retry: int, rng: random.Random) -> float:
        """The wait before retry number `retry` (1 for the second attempt), in seconds."""
        ceiling = min(self.cap_ms, self.base_ms * self.multiplier ** (retry - 1)) / 1000.0
        if self.jitter == "full":
            return rng.uniform(0.0, ceiling)
        if self.jitter == "equal":
            return rng.uniform(ceiling / 2, ceiling)
        return ceiling


class ConcurrencyControlOptions(BaseModel):
    """The mixin of a transactional binding's options: how it isolates one attempt on a
    group, where its store offers both. A binding's options subclass its driver's options
    and this, e.g. `class PostgresMicroOptions(PostgresTxOptions, ConcurrencyControlOptions)`."""

    model_config = ConfigDict(extra="forbid")

    concurrency_control: ConcurrencyControl = Field(
        "pessimistic",
        description="optimistic: read the group's version, buffer the writes, "
        "compare-and-set the version at commit (a moved version aborts as a conflict); "
        "pessimistic: locks taken as the transaction reads (or the store's own "
        "multi-statement transaction)",
    )


class TxOutcome(NamedTuple, Generic[R]):
    """What a transaction came to: `status` (COMMITTED, ABORTED, FAILED or STOPPED), the
    committed attempt's answer (None otherwise) and the attempts made."""

    status: str
    answer: R | None
    attempts: int
