"""Measurement of one socialite runner: action timings and read/write log records.

A runner is one thread (blocking stores) or one whole event loop (asynchronous stores).
The timed wrapper extends flat lists of ints (list.extend of the fields: no Python
object per record is kept; measured cheaper here than array.array or numpy row stores,
benchmarks/README.md) and full batches become numpy records in one vectorised step: log
records go to the fragment's log file, action timings become numpy chunks. Summaries
are exact HDR histograms (microseconds), mergeable across load processes and agents.
"""

import itertools
import threading
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from hdrh.histogram import HdrHistogram

from bgbench.protos import HIST_HIGHEST_US, HIST_LOWEST_US, new_histogram
from bgbench.validation.logformat import RECORD_DTYPE, LogWriter

ACTION_DTYPE = np.dtype(
    [
        ("action", "u1"),
        ("status", "u1"),  # 0 ok, 1 error
        ("thread", "<u2"),  # the socialite runner (thread or task) within its load process
        ("intended", "<i8"),
        ("start", "<i8"),
        ("end", "<i8"),
        ("session", "<i8"),
    ]
)
ACTION_FIELDS = len(ACTION_DTYPE.names or ())  # ints per action in Recorder.acts
RECORD_FIELDS = len(RECORD_DTYPE.names or ())  # ints per log record in Recorder.recs
FLUSH_EVERY = 1 << 13  # records (or actions) per batch: a flush holds its loop about 2 ms
_RECS_AT = FLUSH_EVERY * RECORD_FIELDS
_ACTS_AT = FLUSH_EVERY * ACTION_FIELDS
OK = 0
ERROR = 1


def histogram_of(latencies_ns: np.ndarray) -> HdrHistogram:
    h = new_histogram()
    if len(latencies_ns):
        us = np.clip(latencies_ns // 1000, HIST_LOWEST_US, HIST_HIGHEST_US)
        values, counts = np.unique(us, return_counts=True)
        for v, c in zip(values.tolist(), counts.tolist(), strict=True):
            h.record_value(v, c)
    return h


def to_records(flat: list[int], dtype: np.dtype) -> np.ndarray:
    """Flat int fields, one row after another, as structured records (one numpy step)."""
    names = dtype.names or ()
    rows = np.fromiter(flat, dtype=np.int64, count=len(flat)).reshape(-1, len(names))
    out = np.empty(len(rows), dtype=dtype)
    for i, name in enumerate(names):
        out[name] = rows[:, i]
    return out


class Recorder:
    """Where one runner's timed calls go. The timed wrapper appends to `acts` (ACTION_FIELDS
    ints per action), `recs` (RECORD_FIELDS ints per log record) and `live` (response time
    in ns, for the live view), then calls maybe_flush()."""

    def __init__(self, log: LogWriter, log_lock: "threading.Lock | None" = None) -> None:
        self.acts: list[int] = []
        self.recs: list[int] = []
        self.live: list[int] = []
        self.log = log
        self._log_lock = log_lock
        self._chunks: list[np.ndarray] = []
        self._done_actions = 0
        self.errors: Counter[tuple[int, str]] = Counter()
        self.error_samples: dict[tuple[int, str], str] = {}

    def error(self, action: int, exc: BaseException) -> None:
        key = (action, type(exc).__name__)
        self.errors[key] += 1
        if key not in self.error_samples:
            self.error_samples[key] = str(exc)[:300]

    def maybe_flush(self) -> None:
        if len(self.recs) >= _RECS_AT or len(self.acts) >= _ACTS_AT:
            self._flush_records()
            self._flush_actions()

    def _flush_records(self) -> None:
        flat, self.recs = self.recs, []
        if not flat:
            return
        rows = to_records(flat, RECORD_DTYPE)
        if self._log_lock is None:
            self.log.append(rows)
        else:
            with self._log_lock:
                self.log.append(rows)

    def _flush_actions(self) -> None:
        flat, self.acts = self.acts, []
        if not flat:
            return
        self._done_actions += len(flat) // ACTION_FIELDS
        self._chunks.append(to_records(flat, ACTION_DTYPE))

    @property
    def action_count(self) -> int:
        return self._done_actions + len(self.acts) // ACTION_FIELDS

    def finish(self) -> np.ndarray:
        """Flush everything; return this runner's action timings."""
        self._flush_records()
        if self.acts:
            self._flush_actions()
        if not self._chunks:
            return np.empty(0, dtype=ACTION_DTYPE)
        return np.concatenate(self._chunks)


class LiveLatencies:
    """Histograms of response times per interval, shipped while a run goes on.

    Each cut swaps every recorder's live array for a fresh one, but ships the arrays
    swapped out at the previous cut: a thread that took its array just before the swap
    has long finished appending to it by then. The last cut, after the runners ended,
    ships all. (With one event loop the runner and the cut never interleave.)
    """

    def __init__(self, recorders: list[Recorder]) -> None:
        self.recorders = recorders
        self.waiting: list[list[int]] = []

    def cut(self, final: bool = False) -> bytes:
        fresh = []
        for r in self.recorders:
            batch, r.live = r.live, []
            fresh.append(batch)
        ready = self.waiting + fresh if final else self.waiting
        self.waiting = [] if final else fresh
        values = np.fromiter(itertools.chain.from_iterable(ready), dtype=np.int64)
        return histogram_of(values).encode()  # type: ignore[no-any-return]


@dataclass
class ActionSummary:
    count: int = 0
    errors: int = 0
    response: HdrHistogram = field(default_factory=new_histogram)
    service: HdrHistogram = field(default_factory=new_histogram)

    def merge(self, other: "ActionSummary") -> None:
        self.count += other.count
        self.errors += other.errors
        self.response.add(other.response)
        self.service.add(other.service)


def session_histogram(actions: np.ndarray) -> HdrHistogram:
    """Per session, its slowest action's response time: a session is within a bound
    only if every one of its actions is."""
    if len(actions) == 0:
        return new_histogram()
    order = np.argsort(actions["session"], kind="stable")
    sessions = actions["session"][order]
    latency = (actions["end"] - actions["intended"])[order]
    starts = np.flatnonzero(np.concatenate([[True], sessions[1:] != sessions[:-1]]))
    return histogram_of(np.maximum.reduceat(latency, starts))


def client_delay_ns(actions: np.ndarray) -> np.ndarray:
    """Per action, the time between its intended start and its store call: the client's own
    delay (bookkeeping, waiting for the interpreter or the event loop), never the store's."""
    return actions["start"] - actions["intended"]  # type: ignore[no-any-return]


def summarize(actions: np.ndarray) -> dict[int, ActionSummary]:
    """Per action code: counts and histograms of response and service time."""
    out: dict[int, ActionSummary] = {}
    for code in np.unique(actions["action"]).tolist():
        a = actions[actions["action"] == code]
        out[code] = ActionSummary(
            count=len(a),
            errors=int((a["status"] != 0).sum()),
            response=histogram_of(a["end"] - a["intended"]),
            service=histogram_of(a["end"] - a["start"]),
        )
    return out
