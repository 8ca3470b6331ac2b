"""Per-action timings folded into bounded aggregates as they arrive.

A run of any length keeps the same state: per action kind its count, errors and HDR
buckets of response and service time; the client's delay; per session its slowest
action (only each runner's session in progress is held back, at most one per runner).
Every action also goes to disk in batches (`ActionFile`), never into memory.

`Buckets` are an HDR histogram's counts as a numpy array, filled a batch at a time: the
same buckets as protos.new_histogram, so `histogram()` is what recording every value
would have given, at numpy's speed instead of one Python call per value.
"""

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram

from bgbench.protos import HIST_HIGHEST_US, HIST_LOWEST_US, new_histogram

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
_RUNNERS = 1 << 16  # the thread field's range
# Actions ended per interval of the run, by their own end times: the steady window's
# throughput (a progress report's count comes whenever the load process gets its core).
ENDED_INTERVAL_S = 0.5
_ENDED_INTERVAL_NS = int(ENDED_INTERVAL_S * 1e9)
_ENDED_CHUNK = 7_200  # intervals (an hour) the counts grow by: a run's state stays flat
_ENDED_AT_MOST = 24 * _ENDED_CHUNK  # a day; an action ending later counts in the last one


class Buckets:
    """Counts of microsecond values in new_histogram()'s buckets: `rows` histograms."""

    _shape = new_histogram()

    def __init__(self, rows: int = 1) -> None:
        self.counts = np.zeros((rows, self._shape.counts_len), dtype=np.int64)

    @classmethod
    def index_of(cls, us: np.ndarray) -> np.ndarray:
        """Each value's bucket, as HdrHistogram._counts_index_for computes it one by one."""
        h = cls._shape
        # the bit length of (value | mask): the float64's biased exponent, exact below 2**53
        # (frexp gives the same, at three times the cost)
        as_float = (us | h.sub_bucket_mask).astype(np.float64)
        pow2ceiling = (as_float.view(np.int64) >> 52) - 1022
        bucket = pow2ceiling - h.unit_magnitude - (h.sub_bucket_half_count_magnitude + 1)
        sub_bucket = us >> (bucket + h.unit_magnitude)
        base = (bucket + 1) << h.sub_bucket_half_count_magnitude
        return base + sub_bucket - h.sub_bucket_half_count  # type: ignore[no-any-return]

    def grow(self, rows: int) -> None:
        if rows > len(self.counts):
            more = np.zeros((rows - len(self.counts), self.counts.shape[1]), dtype=np.int64)
            self.counts = np.concatenate([self.counts, more])

    def add_ns(self, latencies_ns: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Count each value (ns) in its row (all in row 0 without `rows`)."""
        if not len(latencies_ns):
            return
        us = np.clip(latencies_ns // 1000, HIST_LOWEST_US, HIST_HIGHEST_US)
        index = self.index_of(us)
        if rows is not None:
            index += rows * self.counts.shape[1]
        found = np.bincount(index)  # as long as the largest index seen
        self.counts.reshape(-1)[: len(found)] += found

    def histogram(self, row: int = 0) -> HdrHistogram:
        return histogram_from_counts(self.counts[row])


def histogram_from_counts(counts: np.ndarray) -> HdrHistogram:
    """new_histogram() holding `counts` (per bucket, as Buckets count them): the counts
    copied in one step, then its total, lowest and highest set as recording each bucket's
    value would have (its encoding is the same, byte for byte)."""
    h = new_histogram()
    found = np.flatnonzero(counts)
    if len(found):
        np.ctypeslib.as_array(h.counts)[: len(counts)] += counts.astype(np.uint64)
        h.set_internal_tacking_values(int(found[0]), int(found[-1]), int(counts.sum()))
    return h


@dataclass
class ActionHistograms:
    """One action kind's tally, before the run result encodes it (run_result.ActionStats)."""

    count: int = 0
    errors: int = 0
    response: HdrHistogram = field(default_factory=new_histogram)
    service: HdrHistogram = field(default_factory=new_histogram)


class ActionFile:
    """Every action's timings, appended batch by batch to a .npy file; the header (numpy
    pads its length for a growing first axis) is rewritten with the count at close."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "wb")  # noqa: SIM115 - closed in close()
        self.count = 0
        self._header()

    def _header(self) -> None:
        header = {
            "descr": np.lib.format.dtype_to_descr(ACTION_DTYPE),
            "fortran_order": False,
            "shape": (self.count,),
        }
        np.lib.format.write_array_header_1_0(self._file, header)

    def append(self, actions: np.ndarray) -> None:
        self._file.write(np.ascontiguousarray(actions, dtype=ACTION_DTYPE).tobytes())
        self.count += len(actions)

    def close(self) -> None:
        if self._file.closed:
            return
        self._file.seek(0)
        self._header()
        self._file.close()


class ActionTally:
    """One run's action timings, batch by batch (`add`), in bounded state. `open_loop`:
    the client's delay of an action counts from the later of its intended start and the
    end of its runner's previous action (an arrival that waited for a free socialite
    waited for the store); closed loop, from its intended start.

    A runner acts one action at a time, so within a batch put in runner order (a stable
    radix sort of the 16-bit runner) its actions are in the order they ran and each
    session's actions are together."""

    def __init__(
        self, open_loop: bool = False, spill: ActionFile | None = None, origin_ns: int | None = None
    ) -> None:
        self.open_loop = open_loop
        # the run's start (monotonic ns): interval 0 of `ended` begins there
        self.origin_ns = time.monotonic_ns() if origin_ns is None else origin_ns
        self._ended = np.zeros(_ENDED_CHUNK, dtype=np.int64)  # per ENDED_INTERVAL_S
        self._ended_len = 0  # intervals up to the latest one an action ended in
        self.spill = spill
        self.count = 0
        self.errors = 0
        self.codes: list[int] = []  # the action codes seen, in their rows' order
        self._row_of = np.full(256, -1, dtype=np.intp)  # action code (u1) -> row
        self.kind_counts = np.zeros(0, dtype=np.int64)  # per row
        self.kind_errors = np.zeros(0, dtype=np.int64)
        self.response = Buckets(0)  # per row: end - intended
        self.service = Buckets(0)  # per row: end - start
        self.delay = Buckets()
        self.sessions = Buckets()  # per session, its slowest action's response time
        self._free = np.zeros(_RUNNERS, dtype=np.int64)  # per runner, its last action's end
        # per runner with one, its latest session (it may go on in the next batch)
        self._open = (np.empty(0, np.uint16), np.empty(0, np.int64), np.empty(0, np.int64))

    def add(self, actions: np.ndarray) -> None:
        if not len(actions):
            return
        if self.spill is not None:
            self.spill.append(actions)
        self.count += len(actions)
        failed = actions["status"] != 0
        self.errors += int(np.count_nonzero(failed))
        intended, start, end = (actions[f].astype(np.int64) for f in ("intended", "start", "end"))
        response = end - intended
        rows = self._rows(actions["action"])
        self.kind_counts += np.bincount(rows, minlength=len(self.codes))
        self.kind_errors += np.bincount(rows[failed], minlength=len(self.codes))
        self.response.add_ns(response, rows)
        self.service.add_ns(end - start, rows)
        runner = actions["thread"]
        if self.open_loop:
            order = np.argsort(runner, kind="stable")
            self.delay.add_ns(
                self._open_loop_delay(runner[order], intended[order], start[order], end[order])
            )
        else:
            self.delay.add_ns(start - intended)
        self._fold_sessions(runner, actions["session"].astype(np.int64), response)
        self._count_ended(end)

    def _count_ended(self, end: np.ndarray) -> None:
        interval = np.clip((end - self.origin_ns) // _ENDED_INTERVAL_NS, 0, _ENDED_AT_MOST - 1)
        found = np.bincount(interval)
        if len(found) > len(self._ended):
            more = -(-(len(found) - len(self._ended)) // _ENDED_CHUNK) * _ENDED_CHUNK
            self._ended = np.concatenate([self._ended, np.zeros(more, np.int64)])
        self._ended[: len(found)] += found
        self._ended_len = max(self._ended_len, len(found))

    @property
    def ended(self) -> np.ndarray:
        """Actions ended per ENDED_INTERVAL_S from origin_ns, by their end times."""
        return self._ended[: self._ended_len]

    def _rows(self, codes: np.ndarray) -> np.ndarray:
        rows = self._row_of[codes]
        if (rows < 0).any():
            for code in np.unique(codes[rows < 0]).tolist():
                self._row_of[code] = len(self.codes)
                self.codes.append(code)
            n = len(self.codes)
            self.kind_counts = np.concatenate(
                [self.kind_counts, np.zeros(n - len(self.kind_counts), np.int64)]
            )
            self.kind_errors = np.concatenate(
                [self.kind_errors, np.zeros(n - len(self.kind_errors), np.int64)]
            )
            self.response.grow(n)
            self.service.grow(n)
            rows = self._row_of[codes]
        return rows  # type: ignore[no-any-return]

    def _open_loop_delay(
        self, runner: np.ndarray, intended: np.ndarray, start: np.ndarray, end: np.ndarray
    ) -> np.ndarray:
        """In runner order: each action's delay from the later of its intended start and
        its runner's previous end (this batch's, or the last batch's)."""
        changes = runner[1:] != runner[:-1]
        free = np.empty(len(runner), dtype=np.int64)
        free[1:] = end[:-1]
        first = np.concatenate([[True], changes])
        free[first] = self._free[runner[first]]
        last = np.concatenate([changes, [True]])
        self._free[runner[last]] = end[last]
        return start - np.maximum(intended, free)  # type: ignore[no-any-return]

    def _fold_sessions(self, runner: np.ndarray, sids: np.ndarray, response: np.ndarray) -> None:
        """Per session its slowest action. A runner's sessions run one after another: all
        but its latest have ended, which is held back (ahead of the next batch's)."""
        open_runner, open_sid, open_max = self._open
        runner = np.concatenate([open_runner, runner])
        sids = np.concatenate([open_sid, sids])
        response = np.concatenate([open_max, response])
        order = np.argsort(runner, kind="stable")
        runner, sids, response = runner[order], sids[order], response[order]
        new = (runner[1:] != runner[:-1]) | (sids[1:] != sids[:-1])
        starts = np.flatnonzero(np.concatenate([[True], new]))
        slowest = np.maximum.reduceat(response, starts)
        runner, sids = runner[starts], sids[starts]
        latest = np.concatenate([runner[1:] != runner[:-1], [True]])
        self.sessions.add_ns(slowest[~latest])
        self._open = (runner[latest], sids[latest], slowest[latest])

    def finish(self) -> None:
        """Every session has ended: count the ones held back."""
        self.sessions.add_ns(self._open[2])
        self._open = (np.empty(0, np.uint16), np.empty(0, np.int64), np.empty(0, np.int64))

    def summaries(self) -> dict[int, ActionHistograms]:
        """Per action code: counts and histograms of response and service time."""
        return {
            code: ActionHistograms(
                int(self.kind_counts[row]),
                int(self.kind_errors[row]),
                self.response.histogram(row),
                self.service.histogram(row),
            )
            for row, code in sorted(enumerate(self.codes), key=lambda rc: rc[1])
        }
