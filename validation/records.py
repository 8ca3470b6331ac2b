"""Log records, and what the records of a genuine log hold, checked as they are read.

A record is possible alone (a known kind, no end before its start, a read that ended,
values and times within a plausible range), and the records of one log hold together:
  - one thread runs one action at a time and logs its records when the action ends, so a
    thread's records come in the order of their starts;
  - no two records are the same (thread, start, kind, item, item id, action, session);
  - the deltas of the whole log add up to far less than int64 can hold, so no sum of them
    (with an initial value) can wrap around.
A duplicated block or record, a record moved, a forged delta or an absurd value breaks one
of these: it is refused with the file and the byte offset, never counted as a stale read.
Every check is vectorised over a block (at most BLOCK_RECORDS records).
"""

from pathlib import Path

import numpy as np

READ = 0
WRITE = 1  # a delta write: value is the change
WRITE_ABS = 2  # an absolute write: value is the new value
NEVER = np.iinfo(np.int64).max

RECORD_DTYPE = np.dtype(
    [
        ("kind", "u1"),  # READ, WRITE (delta) or WRITE_ABS (absolute)
        ("item", "u1"),  # kind of tracked item (workload-defined)
        ("action", "u1"),  # action code (workload-defined)
        ("thread", "<u2"),
        ("item_id", "<i8"),
        ("start", "<i8"),  # monotonic ns
        ("end", "<i8"),  # monotonic ns, NEVER for a write of unknown outcome
        ("value", "<i8"),  # observed value (read) or delta (write)
        ("session", "<i8"),
    ]
)
RECORD_BYTES = RECORD_DTYPE.itemsize

# Tracked values are counts: a value (read, written or initial) beyond 2^53 is not one.
VALUE_LIMIT = 1 << 53
# The deltas of one log together: with an initial value within VALUE_LIMIT, every running
# sum stays below 2^62, so int64 arithmetic on them is exact.
DELTA_TOTAL_LIMIT = 1 << 61
# Times are monotonic nanoseconds: 2^61 ns is 73 years; differences of two stay in int64.
TIME_LIMIT = 1 << 61


class LogFormatError(Exception):
    """A log file that is not what it should be; the message names the file and byte offset."""


class UnfinishedLogError(LogFormatError):
    """A log without its trailer: the writer never closed it (the experiment did not finish,
    or the file was cut short)."""


def check_records(records: np.ndarray, path: Path, offset: int, first: int = 0) -> None:
    """Refuse impossible records; `offset` is the byte offset of records[0] in the file."""
    kind, start, end, value = records["kind"], records["start"], records["end"], records["value"]
    is_read = kind == READ
    unknown = ~(is_read | (kind == WRITE) | (kind == WRITE_ABS))
    backwards = end < start
    unended = is_read & (end == NEVER)
    never_started = start == NEVER
    # compared both ways, never through np.abs: abs of int64's lowest value is itself
    out_of_time = (start > TIME_LIMIT) | (start < -TIME_LIMIT)
    out_of_time |= ((end > TIME_LIMIT) | (end < -TIME_LIMIT)) & (end != NEVER)
    implausible = (value > VALUE_LIMIT) | (value < -VALUE_LIMIT)
    bad = unknown | backwards | unended | never_started | out_of_time | implausible
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    r = records[i]
    if unknown[i]:
        why = f"unknown kind {int(r['kind'])} (0 read, 1 delta write, 2 absolute write)"
    elif never_started[i]:
        why = "its start is NEVER"
    elif backwards[i]:
        why = f"it ends before it starts (end {int(r['end'])} < start {int(r['start'])})"
    elif unended[i]:
        why = "a read that never ended (end = NEVER)"
    elif out_of_time[i]:
        why = f"its times ({int(r['start'])}, {int(r['end'])}) are beyond +-2^61 ns"
    else:
        why = f"its value {int(r['value'])} is beyond +-2^53, not a count"
    raise LogFormatError(
        f"{path}, byte {offset + i * RECORD_BYTES}: record {first + i} is impossible: {why}"
    )


def _abs_total(deltas: np.ndarray) -> int:
    """Exact sum of |deltas| (each within VALUE_LIMIT) as a Python int: high and low halves
    summed apart, since a block of them can exceed int64."""
    magnitude = np.abs(deltas).astype(np.uint64)
    high = int((magnitude >> np.uint64(32)).sum())
    low = int((magnitude & np.uint64(0xFFFFFFFF)).sum())
    return (high << 32) + low


class RecordSequence:
    """The checks across the records of one log, fed its blocks in file order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.delta_total = 0
        # per thread, its records at the latest start seen (a duplicate can only match them)
        self._tail = np.empty(0, dtype=RECORD_DTYPE)

    def check(self, block: np.ndarray, offset: int, first: int) -> None:
        """`block` (records first.. at byte `offset`) is possible and follows what came before."""
        check_records(block, self.path, offset, first)
        self._check_deltas(block, offset, first)
        self._check_order(block, offset, first)

    def _check_deltas(self, block: np.ndarray, offset: int, first: int) -> None:
        is_delta = block["kind"] == WRITE
        total = self.delta_total + _abs_total(block["value"][is_delta])
        if total <= DELTA_TOTAL_LIMIT:
            self.delta_total = total
            return
        running = self.delta_total
        for i in np.flatnonzero(is_delta).tolist():
            running += abs(int(block["value"][i]))
            if running > DELTA_TOTAL_LIMIT:
                raise LogFormatError(
                    f"{self.path}, byte {offset + i * RECORD_BYTES}: record {first + i} is "
                    f"impossible: the log's deltas add up to more than 2^61 (forged or corrupt)"
                )

    def _records(self, block: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The records at sorted `positions` of the tail followed by the block (structured
        arrays are copied whole with np.take, never concatenated in full: that is slow)."""
        held = len(self._tail)
        cut = int(np.searchsorted(positions, held))
        return np.concatenate(
            [np.take(self._tail, positions[:cut]), np.take(block, positions[cut:] - held)]
        )

    def _check_order(self, block: np.ndarray, offset: int, first: int) -> None:
        held = len(self._tail)
        threads = np.concatenate([self._tail["thread"], block["thread"]])
        order = np.argsort(threads, kind="stable")  # per thread, in file order (radix sort)
        thread = np.take(threads, order)
        start = np.take(np.concatenate([self._tail["start"], block["start"]]), order)
        same_thread = thread[1:] == thread[:-1]
        back = np.flatnonzero(same_thread & (start[1:] < start[:-1]))
        if len(back):
            j = int(back[0])
            i = int(order[j + 1]) - held
            raise LogFormatError(
                f"{self.path}, byte {offset + i * RECORD_BYTES}: record {first + i} is out of "
                f"order: thread {int(thread[j + 1])} logged a start of {int(start[j + 1])} ns "
                f"after one of {int(start[j])} ns (a record or block repeated or moved)"
            )
        tied = np.flatnonzero(same_thread & (start[1:] == start[:-1]))
        if len(tied):
            positions = np.sort(order[np.unique(np.concatenate([tied, tied + 1]))])
            self._check_unique(self._records(block, positions), positions, held, offset, first)
        last = np.flatnonzero(np.append(~same_thread, True))
        sizes = np.diff(np.concatenate([[-1], last]))
        latest = np.repeat(start[last], sizes)
        self._tail = self._records(block, np.sort(order[start == latest]))

    def _check_unique(
        self, group: np.ndarray, positions: np.ndarray, held: int, offset: int, first: int
    ) -> None:
        """Two equal records: only possible among one thread's records of equal starts
        (`group`, at `positions` of the tail and block), since each thread's starts are in
        order."""
        fields = ("thread", "start", "kind", "item", "item_id", "action", "session")
        by = np.lexsort(tuple(group[name] for name in reversed(fields)))  # last key sorts first
        keyed = np.take(group, by)
        equal = np.ones(len(keyed) - 1, dtype=bool)
        for name in fields:
            equal &= keyed[name][1:] == keyed[name][:-1]
        if not equal.any():
            return
        pair = int(np.flatnonzero(equal)[0])
        i = int(positions[by[[pair, pair + 1]]].max()) - held  # the later: in this block
        raise LogFormatError(
            f"{self.path}, byte {offset + i * RECORD_BYTES}: record {first + i} is a duplicate "
            "of an earlier record (same thread, start, item, action and session): a record or "
            "block repeated"
        )
