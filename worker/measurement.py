"""Per-thread measurement: action timings and read/write log records.

Threads append plain tuples (the cheapest thing Python can do) and hand full
batches over: log records go to the shared log file, action timings become numpy
chunks. Summaries are exact HDR histograms (microseconds), mergeable across
load processes and agents.
"""

import itertools
import threading
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from hdrh.histogram import HdrHistogram

from bgbench.protos import HIST_HIGHEST_US, HIST_LOWEST_US, new_histogram
from bgbench.validation.logformat import LogWriter

ACTION_DTYPE = np.dtype(
    [
        ("action", "u1"),
        ("status", "u1"),  # 0 ok, 1 error
        ("thread", "<u2"),
        ("intended", "<i8"),
        ("start", "<i8"),
        ("end", "<i8"),
        ("session", "<i8"),
    ]
)
FLUSH_EVERY = 1 << 15


def histogram_of(latencies_ns: np.ndarray) -> HdrHistogram:
    h = new_histogram()
    if len(latencies_ns):
        us = np.clip(latencies_ns // 1000, HIST_LOWEST_US, HIST_HIGHEST_US)
        values, counts = np.unique(us, return_counts=True)
        for v, c in zip(values.tolist(), counts.tolist(), strict=True):
            h.record_value(v, c)
    return h


class ThreadRecorder:
    """One load thread's lists; the Recorder protocol of workloads.bg.timed."""

    def __init__(self, thread: int, log: LogWriter, log_lock: threading.Lock) -> None:
        self.thread = thread
        self.actions: list[tuple[int, int, int, int, int, int, int]] = []
        self.records: list[tuple[int, int, int, int, int, int, int, int, int]] = []
        self.live: list[int] = []  # response times (ns) not yet shipped live
        self.in_call = 0  # start (monotonic ns) of the store call in progress, 0 if none
        self._log = log
        self._log_lock = log_lock
        self._chunks: list[np.ndarray] = []
        self._done_actions = 0
        self.errors: Counter[tuple[int, str]] = Counter()
        self.error_samples: dict[tuple[int, str], str] = {}
        self.consecutive_errors = 0

    def error(self, action: int, exc: BaseException) -> None:
        key = (action, type(exc).__name__)
        self.errors[key] += 1
        self.error_samples.setdefault(key, str(exc)[:300])
        self.consecutive_errors += 1

    def maybe_flush(self) -> None:
        if len(self.records) >= FLUSH_EVERY:
            self._flush_records()
        if len(self.actions) >= FLUSH_EVERY:
            self._flush_actions()

    def _flush_records(self) -> None:
        rows, self.records = self.records, []
        with self._log_lock:
            self._log.append_rows(rows)

    def _flush_actions(self) -> None:
        rows, self.actions = self.actions, []
        self._done_actions += len(rows)
        self._chunks.append(np.array(rows, dtype=ACTION_DTYPE))

    @property
    def action_count(self) -> int:
        return self._done_actions + len(self.actions)

    def finish(self) -> np.ndarray:
        """Flush everything; return this thread's action timings."""
        self._flush_records()
        if self.actions:
            self._flush_actions()
        if not self._chunks:
            return np.empty(0, dtype=ACTION_DTYPE)
        return np.concatenate(self._chunks)


class LiveLatencies:
    """Histograms of response times per interval, shipped while a run goes on.

    Each cut swaps every thread's live list for a fresh one, but ships the lists swapped
    out at the previous cut: a thread that read its list just before the swap has long
    finished appending to it by then. The last cut, after the threads ended, ships all.
    """

    def __init__(self, recorders: list[ThreadRecorder]) -> None:
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
