"""Where timed calls go: the interface the load engine's recorder implements.

A workload never makes a recorder: the engine gives each socialite runner one, and the
workload's Timer appends to it. The fields are flat lists of ints, one record after
another (no Python object per record: the cheapest form measured), so a workload that
writes a hot path out in full (as BG's timed connection does) extends them directly:

- `acts`: ACTION_FIELDS ints per action: (action code, OK or ERROR, runner, intended start
  ns, start ns, end ns, session id);
- `recs`: RECORD_FIELDS ints per log record: (READ/WRITE/WRITE_ABS, item kind, action
  code, runner, item id, start ns, end ns, value or delta, session id).

The live view takes each action's response time from `acts` when its batch is flushed.

After appending, call `maybe_flush()`: full batches leave for the log and the tallies.
"""

from typing import Protocol

OK = 0  # an action's status: the store answered
ERROR = 1  # the store raised
ACTION_FIELDS = 7  # ints per action in Recorder.acts
RECORD_FIELDS = 9  # ints per log record in Recorder.recs


class Recorder(Protocol):
    """One socialite runner's sink for timed calls (the engine's implementation lives in
    the worker); see the module docstring for the layout of the two lists."""

    acts: list[int]
    recs: list[int]

    def error(self, action: int, exc: BaseException) -> None:
        """Count a failed call of `action` by the exception's type (a sample kept)."""
        ...

    def tally(self, action: int, name: str, n: int) -> None:
        """Add `n` to the named count of `action` (a transaction's commits, aborts by
        cause, retries, back-off time: sdk.transactions names them); reported per action."""
        ...

    def maybe_flush(self) -> None:
        """Hand full batches on; cheap when none is full."""
        ...
