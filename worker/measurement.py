"""Measurement of one socialite runner: action timings and read/write log records.

A runner is one thread (blocking stores) or one whole event loop (asynchronous stores).
The timed wrapper extends flat lists of ints (list.extend of the fields: no Python
object per record is kept; measured cheaper here than array.array or numpy row stores,
benchmarks/README.md) and full batches become numpy records in one vectorised step: log
records go to the fragment's log file, action timings to a sink that folds them into
bounded aggregates (worker/tally.py): memory stays flat in a run of any length. The live
view's response times are taken from the same batches (nothing more per action).
Summaries are exact HDR histograms (microseconds), mergeable across load processes and
agents.
"""

import contextlib
import threading
from collections import Counter
from typing import Protocol

import numpy as np
from hdrh.histogram import HdrHistogram

from bgbench.protos import HIST_HIGHEST_US, HIST_LOWEST_US, new_histogram
from bgbench.sdk import recording
from bgbench.sdk.recording import ERROR as ERROR
from bgbench.sdk.recording import OK as OK
from bgbench.validation.logformat import RECORD_DTYPE, LogWriter
from bgbench.worker.tally import ACTION_DTYPE, ActionTally, Buckets, histogram_from_counts

ACTION_FIELDS = len(ACTION_DTYPE.names or ())  # ints per action in Recorder.acts
RECORD_FIELDS = len(RECORD_DTYPE.names or ())  # ints per log record in Recorder.recs
FLUSH_EVERY = 1 << 13  # records (or actions) per batch: a flush holds its loop about 2 ms
# Threads each batch their own: together they hold at most about this many actions (and
# as many records) between flushes, each at least MIN_BATCH (a flush has a fixed cost).
PENDING_AT_MOST = 1 << 17
MIN_BATCH = 1 << 7
assert (ACTION_FIELDS, RECORD_FIELDS) == (recording.ACTION_FIELDS, recording.RECORD_FIELDS)


def is_timeout(error_type: str) -> bool:
    """An error counted as a timeout (Progress.timeouts): its type's name says so."""
    name = error_type.lower()
    return "timeout" in name or "timedout" in name


def histogram_of(latencies_ns: np.ndarray, lowest_us: int = HIST_LOWEST_US) -> HdrHistogram:
    """An HDR histogram (µs) of latencies in ns, clipped to [lowest_us, the highest]: their
    buckets counted in numpy (no Python call per distinct value)."""
    if not len(latencies_ns):
        return new_histogram()
    us = np.clip(np.asarray(latencies_ns, dtype=np.int64) // 1000, lowest_us, HIST_HIGHEST_US)
    return histogram_from_counts(np.bincount(Buckets.index_of(us)))


def visibility_histogram(times_ns: np.ndarray) -> HdrHistogram:
    """Like histogram_of, but 0 stays 0: a write visible at its end is the common case."""
    return histogram_of(times_ns, lowest_us=0)


def batch_for(recorders: int) -> int:
    """Actions (or records) per batch of each of `recorders` recorders."""
    return max(MIN_BATCH, min(FLUSH_EVERY, PENDING_AT_MOST // max(1, recorders)))


def to_records(flat: list[int], dtype: np.dtype) -> np.ndarray:
    """Flat int fields, one row after another, as structured records (one numpy step)."""
    names = dtype.names or ()
    rows = np.fromiter(flat, dtype=np.int64, count=len(flat)).reshape(-1, len(names))
    out = np.empty(len(rows), dtype=dtype)
    for i, name in enumerate(names):
        out[name] = rows[:, i]
    return out


class ActionSink(Protocol):
    """Where batches of action timings (ACTION_DTYPE records) go: an ActionTally."""

    def add(self, actions: np.ndarray) -> None: ...


class Recorder:
    """Where one runner's timed calls go (the SDK's `Recorder` protocol). The timed wrapper
    appends to `acts` (ACTION_FIELDS ints per action) and `recs` (RECORD_FIELDS ints per
    log record), then calls maybe_flush(). Full batches go to the log and to `sink` (a
    bounded ActionTally unless given), and their response times to the live view:
    nothing per action is kept here. Recorders of threads share `lock`, which guards the
    log, the sink and the live view's parts, and batch `batch_for(threads)` each."""

    def __init__(
        self,
        log: LogWriter,
        lock: "threading.Lock | None" = None,
        sink: ActionSink | None = None,
        batch: int = FLUSH_EVERY,
    ) -> None:
        self.acts: list[int] = []
        self.recs: list[int] = []
        self.log = log
        self.sink: ActionSink = sink if sink is not None else ActionTally()
        self._lock = lock
        self._batch = batch
        self._recs_at = batch * RECORD_FIELDS
        self._acts_at = batch * ACTION_FIELDS
        # response times (ns) of the batches flushed since the live view's last take; None
        # while no live view watches this recorder (nothing is kept for nobody)
        self._live: list[np.ndarray] | None = None
        self._done_actions = 0
        self.errors: Counter[tuple[int, str]] = Counter()
        self.error_samples: dict[tuple[int, str], str] = {}
        self.timeouts = 0
        # per action code, its named tallies (a transaction's commits, aborts, ...): only
        # the runner's own thread adds to them, and only when a unit calls tally
        self.counts: dict[int, dict[str, int]] = {}

    def error(self, action: int, exc: BaseException) -> None:
        key = (action, type(exc).__name__)
        self.errors[key] += 1
        if is_timeout(key[1]):
            self.timeouts += 1
        if key not in self.error_samples:
            self.error_samples[key] = str(exc)[:300]

    def tally(self, action: int, name: str, n: int) -> None:
        named = self.counts.get(action)
        if named is None:
            named = self.counts[action] = {}
        named[name] = named.get(name, 0) + n

    def maybe_flush(self) -> None:
        if len(self.recs) >= self._recs_at or len(self.acts) >= self._acts_at:
            self.finish()

    def finish(self) -> None:
        """Hand every pending log record and action to the log and the sink (when a batch is
        full, when the live view asks, and at the runner's end)."""
        self._acts_at = self._batch * ACTION_FIELDS  # a flush the live view asked for is done
        recs, self.recs = self.recs, []
        acts, self.acts = self.acts, []
        self._done_actions += len(acts) // ACTION_FIELDS
        rows = to_records(recs, RECORD_DTYPE) if recs else None
        actions = to_records(acts, ACTION_DTYPE) if acts else None
        with self._lock or contextlib.nullcontext():
            if rows is not None:
                self.log.append(rows)
            if actions is not None:
                self.sink.add(actions)
                if self._live is not None:
                    self._live.append(actions["end"] - actions["intended"])

    def watch_live(self) -> None:
        """Keep the response times of every batch flushed from now on, for take_live."""
        if self._live is None:
            self._live = []

    def take_live(self) -> list[np.ndarray]:
        """The response times (ns) flushed since the last take. A runner's own thread (or
        its event loop) flushes what it holds first; another thread only asks the runner to
        flush at its next action (its first full check then passes), and takes those the
        next time."""
        if self._lock is None:
            self.finish()
            taken, self._live = self._live or [], []
            return taken
        self._acts_at = 0  # one int stored: the runner sees it at its next maybe_flush
        with self._lock:
            taken, self._live = self._live or [], []
        return taken

    @property
    def action_count(self) -> int:
        return self._done_actions + len(self.acts) // ACTION_FIELDS


class LiveLatencies:
    """Histograms of response times per interval, shipped while a run goes on.

    Each cut takes the response times every recorder flushed since the last one
    (Recorder.take_live): on an event loop all of them up to now; a thread's recorder
    flushes what it holds at its next action after the cut, so those come with the next
    cut. The last cut, after the runners ended, flushes and ships all.
    """

    def __init__(self, recorders: list[Recorder]) -> None:
        self.recorders = recorders
        for r in recorders:
            r.watch_live()

    def cut(self, final: bool = False) -> bytes:
        if final:  # the runners have ended: every recorder's own thread is done with it
            for r in self.recorders:
                r.finish()
        parts = [part for r in self.recorders for part in r.take_live()]
        values = np.concatenate(parts) if parts else np.empty(0, np.int64)
        return histogram_of(values).encode()  # type: ignore[no-any-return]
