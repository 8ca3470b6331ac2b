"""Where each read stands among the writes of its item, computed vectorised.

Items are (kind, id) pairs numbered densely in (id, kind) order; times become order-keeping
codes (offsets from the earliest time, or ranks when the range is too wide) so that an
(item, time) pair packs into one sortable int64. Writes are sorted by (item, end) and by
(item, start); reads are grouped by item (a linear radix sort), so the binary searches that
place them among their item's writes hit memory in order. For every read this gives: the
writes of its item that ended before it started (F: a prefix in end order), and whether any
overlap it (O). Reads with O empty are settled without looking at any write one by one.
(Records are taken as the log format delivers them: no interval ends before it starts.)

All per-read arrays here are in index order (reads grouped by item, in log order within
one); `read_order[k]` is the position among the log's reads of the read at index position k.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bgbench.validation.logformat import NEVER

# Below this, item_id * 256 + item (the original item key) orders items as (id, kind) does.
_SAFE_ID = 1 << 54


@dataclass
class Items:
    dense: np.ndarray  # per record: its item, numbered 0..count-1 in (id, kind) order
    count: int
    kind: np.ndarray | None  # per item: its kind and id (None for ids beyond _SAFE_ID)
    item_id: np.ndarray | None


def dense_items(item: np.ndarray, item_id: np.ndarray) -> Items:
    """Dense item numbers: by a lookup table when the ids span a small range (linear time),
    else by sorting the original keys item_id * 256 + item."""
    n = len(item)
    if n == 0:
        return Items(np.empty(0, np.int64), 0, np.empty(0, np.int64), np.empty(0, np.int64))
    lo_id, hi_id = int(item_id.min()), int(item_id.max())
    lo_k, hi_k = int(item.min()), int(item.max())
    kinds = hi_k - lo_k + 1
    span = (hi_id - lo_id + 1) * kinds
    if lo_id > -_SAFE_ID and hi_id < _SAFE_ID and span <= max(4 * n, 1 << 16):
        compact = (item_id - lo_id) * kinds + (item.astype(np.int64) - lo_k)
        present = np.zeros(span, dtype=bool)
        present[compact] = True
        number = np.cumsum(present, dtype=np.int64) - 1
        held = np.flatnonzero(present)
        return Items(number[compact], len(held), held % kinds + lo_k, held // kinds + lo_id)
    keys = item_id.astype(np.int64) * 256 + item
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    first = np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]])
    dense = np.empty(n, dtype=np.int64)
    dense[order] = np.cumsum(first) - 1
    if not (lo_id > -_SAFE_ID and hi_id < _SAFE_ID):  # keys may wrap: readers look up ids
        return Items(dense, int(first.sum()), None, None)
    held = order[first]  # per item, one of its records
    return Items(dense, len(held), item[held].astype(np.int64), item_id[held].astype(np.int64))


@dataclass
class TimeCodes:
    """Order-keeping integer codes for times: t - t0, or the rank among all the log's times
    (when t - t0 would not leave room for the item in an int64). NEVER codes above all."""

    bits: int
    t0: int | None
    sorted_times: np.ndarray | None

    @classmethod
    def choose(cls, start: np.ndarray, end: np.ndarray, item_bits: int) -> "TimeCodes":
        if len(start) == 0:
            return cls(1, 0, None)
        known = end != NEVER
        t0 = min(int(start.min()), int(end.min()))
        top = max(int(start.max()), int(end.max(where=known, initial=t0)))
        bits = (top - t0 + 1).bit_length()
        if item_bits + bits <= 62:
            return cls(bits, t0, None)
        times = np.sort(np.concatenate([start, end]))
        return cls(max(1, len(times).bit_length()), None, times)

    def code(self, t: np.ndarray) -> np.ndarray:
        """Codes of times of the log; NEVER codes above every other time."""
        if self.t0 is None:
            assert self.sorted_times is not None  # choose() sets one of t0 and sorted_times
            return np.searchsorted(self.sorted_times, t).astype(np.int64)
        return np.where(t == NEVER, (1 << self.bits) - 1, t - self.t0)


@dataclass
class WriteIndex:
    records: np.ndarray
    items: Items
    times: TimeCodes
    read_pos: np.ndarray  # positions of the reads among the records (log order)
    write_pos: np.ndarray  # positions of the writes among the records (log order)
    read_order: np.ndarray  # index position -> position among the reads
    r_row: np.ndarray  # index position -> position among the records (read_pos[read_order])
    r_item: np.ndarray  # per read (index order): dense item
    r_s: np.ndarray  # per read: code of its start, of its end
    r_e: np.ndarray
    w_item: np.ndarray  # per write (log order): dense item
    w_s: np.ndarray  # per write: codes of its start and end
    w_e: np.ndarray
    w_value: np.ndarray
    known: np.ndarray  # per write: its outcome is known (end != NEVER)
    by_end: np.ndarray  # write positions sorted by (item, end)
    end_key: np.ndarray  # (item << bits | end code) in that order
    by_start: np.ndarray  # write positions sorted by (item, start)
    start_key: np.ndarray
    run_start: np.ndarray  # per item: first position of its writes in either order; + total
    group_lo: np.ndarray  # per read: run_start of its item
    ended: np.ndarray  # per read: positions [group_lo, ended) in end order ended before it
    overlaps: np.ndarray  # per read: does any write of its item overlap it (is O non-empty)?

    @classmethod
    def build(cls, records: np.ndarray, is_read: np.ndarray) -> "WriteIndex":
        read_pos = np.flatnonzero(is_read)
        write_pos = np.flatnonzero(~is_read)
        items = dense_items(records["item"], records["item_id"])
        start, end = records["start"], records["end"]
        times = TimeCodes.choose(start, end, max(items.count - 1, 0).bit_length())
        bits = times.bits
        s_code, e_code = times.code(start), times.code(end)
        w_item = items.dense[write_pos]
        w_s, w_e = s_code[write_pos], e_code[write_pos]
        end_comp = (w_item << bits) | w_e
        by_end = np.argsort(end_comp, kind="stable")
        start_comp = (w_item << bits) | w_s
        by_start = np.argsort(start_comp, kind="stable")
        # Gather in log order, then permute: gathering at item-grouped positions directly
        # would jump about the whole log.
        r_item = items.dense[read_pos]
        read_order = group_order(r_item, items.count)
        r_item = r_item[read_order]
        r_s, r_e = s_code[read_pos][read_order], e_code[read_pos][read_order]
        r_key = (r_item << bits) | r_s
        run_start = np.concatenate(
            [[0], np.cumsum(np.bincount(w_item, minlength=items.count))]
        ).astype(np.int64)
        group_lo = run_start[r_item]
        end_key = end_comp[by_end]
        start_key = start_comp[by_start]
        ended = np.searchsorted(end_key, r_key)  # end < r.s
        # O is not empty iff a write of the item ending at or after r.s started by r.e: the
        # earliest start from position `ended` on in end order (later items' keys are larger).
        first_start = (w_item[by_end] << bits) | w_s[by_end]
        first_start = np.minimum.accumulate(first_start[::-1])[::-1]
        first_start = np.append(first_start, np.iinfo(np.int64).max)
        overlaps = first_start[ended] <= ((r_item << bits) | r_e)
        return cls(
            records, items, times, read_pos, write_pos, read_order, read_pos[read_order],
            r_item, r_s, r_e,
            w_item, w_s, w_e, records["value"][write_pos], end[write_pos] != NEVER,
            by_end, end_key, by_start, start_key, run_start, group_lo, ended, overlaps,
        )  # fmt: skip

    def overlapping_pairs(self, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every (k, write) with write overlapping read sel[k]: the writes of its item that end
        at or after its start and start at or before its end (in no particular order).

        Known writes are found in start order from the first whose running maximum end
        reaches the read's start (every write before it ended before the read began);
        writes of unknown outcome are looked up in their own sorted list."""
        bits = self.bits
        reach = self._reach
        item, rs = self.r_item[sel], self.r_s[sel]
        lo = np.searchsorted(reach, (item << bits) | rs)
        started = np.searchsorted(self.start_key, (item << bits) | self.r_e[sel], side="right")
        k, at = expand(lo, np.maximum(started, lo))
        w = self.by_start[at]
        keep = self.known[w] & (self.w_e[w] >= rs[k])
        k, w = k[keep], w[keep]
        open_key, open_writes = self._open
        if len(open_writes):
            o_lo = np.searchsorted(open_key, item << bits)
            o_hi = np.searchsorted(open_key, (item << bits) | self.r_e[sel], side="right")
            ok, oat = expand(o_lo, o_hi)
            k, w = np.concatenate([k, ok]), np.concatenate([w, open_writes[oat]])
        return k, w

    @property
    def bits(self) -> int:
        return self.times.bits

    @cached_property
    def values_by_end(self) -> np.ndarray:
        values: np.ndarray = self.w_value[self.by_end]
        return values

    @cached_property
    def known_count(self) -> np.ndarray:
        """Per item: its writes of known outcome, the first ones of its run in end order."""
        return np.bincount(self.w_item[self.known], minlength=self.items.count)

    @cached_property
    def _reach(self) -> np.ndarray:
        """In start order: (item << bits | the latest end so far among the item's known writes)."""
        ends = np.where(self.known, self.w_e, 0)[self.by_start]
        key = (self.w_item[self.by_start] << self.bits) | ends
        return np.maximum.accumulate(key) if len(key) else key

    @cached_property
    def _open(self) -> tuple[np.ndarray, np.ndarray]:
        """Writes of unknown outcome in (item, start) order: their keys and positions."""
        unknown = ~self.known[self.by_start]
        return self.start_key[unknown], self.by_start[unknown]


def group_order(keys: np.ndarray, count: int) -> np.ndarray:
    """A stable order of keys in 0..count-1: numpy's radix sort (it takes 16-bit keys), in
    one or two passes, else a comparison sort."""
    if count <= 1 << 16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    if count <= 1 << 32:
        low = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
        return low[np.argsort((keys[low] >> 16).astype(np.uint16), kind="stable")]
    return np.argsort(keys, kind="stable")


def expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k, p) for every k and every p in [lo[k], hi[k])."""
    counts = hi - lo
    k = np.repeat(np.arange(len(lo)), counts)
    first = np.cumsum(counts) - counts
    return k, lo[k] + (np.arange(len(k)) - first[k])
