"""Per-action timings folded into bounded aggregates as they arrive.

A run of any length keeps the same state: per action kind its count, errors and HDR
buckets of response and service time; the client's delay; per session its slowest
action (only each runner's session in progress is held back, at most one per runner).
Every action also goes to disk in batches (`ActionFile`), never into memory.

`Buckets` are an HDR histogram's counts as a numpy array, filled a batch at a time: the
same buckets as protos.new_histogram, so `histogram()` is what recording every value
would have given, at numpy's speed instead of one Python call per value.
"""

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


class Buckets:
    """Counts of microsecond values in new_histogram()'s buckets."""

    _shape = new_histogram()

    def __init__(self) -> None:
        self.counts = np.zeros(self._shape.counts_len, dtype=np.int64)

    @classmethod
    def index_of(cls, us: np.ndarray) -> np.ndarray:
        """Each value's bucket, as HdrHistogram._counts_index_for computes it one by one."""
        h = cls._shape
        # the bit length of (value | mask): exact in float64 below 2**53
        pow2ceiling = np.frexp((us | h.sub_bucket_mask).astype(np.float64))[1]
        bucket = pow2ceiling - h.unit_magnitude - (h.sub_bucket_half_count_magnitude + 1)
        sub_bucket = us >> (bucket + h.unit_magnitude)
        base = (bucket + 1) << h.sub_bucket_half_count_magnitude
        return base + sub_bucket - h.sub_bucket_half_count  # type: ignore[no-any-return]

    def add_ns(self, latencies_ns: np.ndarray) -> None:
        if len(latencies_ns):
            us = np.clip(latencies_ns // 1000, HIST_LOWEST_US, HIST_HIGHEST_US)
            found = np.bincount(self.index_of(us))  # as long as the largest bucket seen
            self.counts[: len(found)] += found

    def histogram(self) -> HdrHistogram:
        h = new_histogram()
        for i in np.flatnonzero(self.counts).tolist():
            h.record_value(h.get_value_from_index(i), int(self.counts[i]))
        return h


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


@dataclass
class _Kind:
    count: int = 0
    errors: int = 0
    response: Buckets = field(default_factory=Buckets)  # end - intended
    service: Buckets = field(default_factory=Buckets)  # end - start


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
    waited for the store); closed loop, from its intended start."""

    def __init__(self, open_loop: bool = False, spill: ActionFile | None = None) -> None:
        self.open_loop = open_loop
        self.spill = spill
        self.count = 0
        self.errors = 0
        self.kinds: dict[int, _Kind] = {}
        self.delay = Buckets()
        self.sessions = Buckets()  # per session, its slowest action's response time
        self._free = np.zeros(_RUNNERS, dtype=np.int64)  # per runner, its last action's end
        # per runner, its latest session (it may go on in the next batch): id, runner, max
        self._open = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))

    def add(self, actions: np.ndarray) -> None:
        if not len(actions):
            return
        if self.spill is not None:
            self.spill.append(actions)
        self.count += len(actions)
        failed = actions["status"] != 0
        self.errors += int(failed.sum())
        response = actions["end"] - actions["intended"]
        service = actions["end"] - actions["start"]
        codes = actions["action"]
        for code in np.unique(codes).tolist():
            of = codes == code
            kind = self.kinds.setdefault(code, _Kind())
            kind.count += int(of.sum())
            kind.errors += int(failed[of].sum())
            kind.response.add_ns(response[of])
            kind.service.add_ns(service[of])
        if self.open_loop:
            self.delay.add_ns(self._open_loop_delay(actions))
        else:
            self.delay.add_ns(actions["start"] - actions["intended"])
        self._fold_sessions(actions["session"], actions["thread"].astype(np.int64), response)

    def _open_loop_delay(self, actions: np.ndarray) -> np.ndarray:
        a = actions[np.lexsort((actions["start"], actions["thread"]))]
        runner = a["thread"]
        changes = runner[1:] != runner[:-1]
        free = np.empty(len(a), dtype=np.int64)
        free[1:] = a["end"][:-1]
        first = np.concatenate([[True], changes])
        free[first] = self._free[runner[first]]
        last = np.concatenate([changes, [True]])
        self._free[runner[last]] = a["end"][last]
        return a["start"] - np.maximum(a["intended"], free)  # type: ignore[no-any-return]

    def _fold_sessions(self, sids: np.ndarray, runners: np.ndarray, response: np.ndarray) -> None:
        """Per session its slowest action; a runner's sessions run one after another, so
        all but its latest have ended."""
        open_sids, open_runners, open_max = self._open
        sids = np.concatenate([open_sids, sids])
        runners = np.concatenate([open_runners, runners])
        response = np.concatenate([open_max, response])
        order = np.argsort(sids, kind="stable")
        sids, runners, response = sids[order], runners[order], response[order]
        starts = np.flatnonzero(np.concatenate([[True], sids[1:] != sids[:-1]]))
        slowest = np.maximum.reduceat(response, starts)
        sids, runners = sids[starts], runners[starts]
        by_runner = np.lexsort((sids, runners))
        latest = np.zeros(len(sids), dtype=bool)
        ranked = runners[by_runner]
        latest[by_runner[np.concatenate([ranked[1:] != ranked[:-1], [True]])]] = True
        self.sessions.add_ns(slowest[~latest])
        self._open = (sids[latest], runners[latest], slowest[latest])

    def finish(self) -> None:
        """Every session has ended: count the ones held back."""
        self.sessions.add_ns(self._open[2])
        self._open = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))

    def summaries(self) -> dict[int, ActionSummary]:
        """Per action code: counts and histograms of response and service time."""
        return {
            code: ActionSummary(k.count, k.errors, k.response.histogram(), k.service.histogram())
            for code, k in sorted(self.kinds.items())
        }
