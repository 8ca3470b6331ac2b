"""Where each read stands among the writes of its item, computed vectorised.

Items are (kind, id) pairs made dense; times are replaced by their ranks so that an
(item, time) pair packs into one sortable int64. For every read this gives: the
writes of its item that ended before it started (F: a prefix in end order), and
how many overlap it (O). Reads with O empty are settled without any search.
"""

from dataclasses import dataclass

import numpy as np

from bgbench.validation.logformat import NEVER


def item_keys(records: np.ndarray) -> np.ndarray:
    return records["item_id"].astype(np.int64) * 256 + records["item"]


def _dense_ranks(keys: np.ndarray) -> np.ndarray:
    """0..k-1 for the k distinct keys, in key order (np.unique's inverse, by sorting)."""
    if len(keys) == 0:
        return keys.astype(np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    step = np.concatenate([[0], (sorted_keys[1:] != sorted_keys[:-1]).astype(np.int64)])
    dense = np.empty(len(keys), dtype=np.int64)
    dense[order] = np.cumsum(step)
    return dense


@dataclass
class WriteIndex:
    reads: np.ndarray
    writes: np.ndarray
    r_key: np.ndarray  # dense item of each read
    w_key: np.ndarray  # dense item of each write
    by_end: np.ndarray  # write positions sorted by (item, end)
    key_by_end: np.ndarray  # w_key[by_end]
    group_lo: np.ndarray  # per read: first position (in by_end) of its item's writes
    ended: np.ndarray  # per read: positions [group_lo, ended) ended before the read started
    overlapping: np.ndarray  # per read: how many writes overlap it
    w_s: np.ndarray  # rank of each write's start
    w_e: np.ndarray
    r_s: np.ndarray
    r_e: np.ndarray
    times: np.ndarray  # every time, sorted: a rank is the position of a time's first copy
    by_start: np.ndarray  # write positions sorted by (item, start)
    start_sorted: np.ndarray  # (item << 32 | start rank) in that order
    longest: int  # the longest duration of a write of known outcome, ns
    open_writes: dict[int, np.ndarray]  # item -> positions of writes of unknown outcome

    @classmethod
    def build(cls, reads: np.ndarray, writes: np.ndarray) -> "WriteIndex":
        all_keys = np.concatenate([item_keys(reads), item_keys(writes)])
        dense = _dense_ranks(all_keys)
        if len(dense) and dense.max() >= 1 << 31:
            raise ValueError("too many distinct items for one in-memory pass: split the logs")
        r_key = dense[: len(reads)]
        w_key = dense[len(reads) :]
        # Every time's rank among all times (equal times, equal ranks), by one sort.
        all_times = np.concatenate([reads["start"], reads["end"], writes["start"], writes["end"]])
        order = np.argsort(all_times, kind="stable")
        times = all_times[order]
        first = np.concatenate([[True], times[1:] != times[:-1]]) if len(times) else times
        ranks = np.empty(len(all_times), dtype=np.int64)
        ranks[order] = np.maximum.accumulate(np.where(first, np.arange(len(times)), 0))
        n_r, n_w = len(reads), len(writes)
        r_s, r_e = ranks[:n_r], ranks[n_r : 2 * n_r]
        w_s, w_e = ranks[2 * n_r : 2 * n_r + n_w], ranks[2 * n_r + n_w :]
        end_comp = (w_key << 32) | w_e
        by_end = np.argsort(end_comp, kind="stable")
        end_sorted = end_comp[by_end]
        start_comp = (w_key << 32) | w_s
        by_start = np.argsort(start_comp, kind="stable")
        start_sorted = start_comp[by_start]
        known = writes["end"] != NEVER
        longest = int((writes["end"][known] - writes["start"][known]).max(initial=0))
        open_writes = {
            int(k): np.flatnonzero((w_key == k) & ~known) for k in np.unique(w_key[~known])
        }
        # An item's writes form one run in either order; the runs start where the
        # counts of the items before it end (item keys are dense 0..k-1).
        n_items = int(max(r_key.max(initial=-1), w_key.max(initial=-1))) + 1
        run_start = np.concatenate([[0], np.cumsum(np.bincount(w_key, minlength=n_items))])
        group_lo = run_start[r_key]
        ended = np.searchsorted(end_sorted, (r_key << 32) | r_s)  # end < r.s
        started = np.searchsorted(start_sorted, (r_key << 32) | r_e, side="right")
        started -= group_lo  # start <= r.e
        overlapping = started - (ended - group_lo)
        return cls(
            reads, writes, r_key, w_key, by_end, w_key[by_end], group_lo, ended, overlapping,
            w_s, w_e, r_s, r_e, times, by_start, start_sorted, longest, open_writes,
        )  # fmt: skip

    def overlapping_writes(self, i: int) -> np.ndarray:
        """Writes of read i's item that overlap it: found in a window of start times, since a
        write of known outcome that started more than `longest` before the read ended before
        it; writes of unknown outcome are looked up apart."""
        r = self.reads[i]
        key = self.r_key[i] << 32
        earliest = np.searchsorted(self.times, int(r["start"]) - self.longest)
        lo = np.searchsorted(self.start_sorted, key | earliest)
        hi = np.searchsorted(self.start_sorted, key | self.r_e[i], side="right")
        window = self.by_start[lo:hi]
        extra = self.open_writes.get(int(self.r_key[i]))
        if extra is not None:
            window = np.union1d(window, extra[self.w_s[extra] <= self.r_e[i]])
        w = self.writes[window]
        return w[(w["end"] >= r["start"]) & (w["start"] <= r["end"])]
