"""Where each read stands among the writes of its item, computed vectorised.

Items are (kind, id) pairs made dense; times are replaced by their ranks so that an
(item, time) pair packs into one sortable int64. For every read this gives: the
writes of its item that ended before it started (F: a prefix in end order), and
how many overlap it (O). Reads with O empty are settled without any search.
"""

from dataclasses import dataclass

import numpy as np


def item_keys(records: np.ndarray) -> np.ndarray:
    return records["item_id"].astype(np.int64) * 256 + records["item"]


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

    @classmethod
    def build(cls, reads: np.ndarray, writes: np.ndarray) -> "WriteIndex":
        keys, dense = np.unique(
            np.concatenate([item_keys(reads), item_keys(writes)]), return_inverse=True
        )
        if len(keys) >= 1 << 31:
            raise ValueError("too many distinct items for one in-memory pass: split the logs")
        r_key = dense[: len(reads)].astype(np.int64)
        w_key = dense[len(reads) :].astype(np.int64)
        times = np.unique(
            np.concatenate([reads["start"], reads["end"], writes["start"], writes["end"]])
        )
        rank = lambda t: np.searchsorted(times, t).astype(np.int64)  # noqa: E731
        r_s, r_e = rank(reads["start"]), rank(reads["end"])
        w_s, w_e = rank(writes["start"]), rank(writes["end"])
        end_comp = (w_key << 32) | w_e
        by_end = np.argsort(end_comp, kind="stable")
        end_sorted = end_comp[by_end]
        start_sorted = np.sort((w_key << 32) | w_s)
        group_lo = np.searchsorted(end_sorted, r_key << 32)
        ended = np.searchsorted(end_sorted, (r_key << 32) | r_s)  # end < r.s
        started = np.searchsorted(start_sorted, (r_key << 32) | r_e, side="right")
        started -= np.searchsorted(start_sorted, r_key << 32)  # start <= r.e
        overlapping = started - (ended - group_lo)
        return cls(
            reads, writes, r_key, w_key, by_end, w_key[by_end], group_lo, ended, overlapping,
            w_s, w_e, r_s, r_e,
        )  # fmt: skip

    def item_writes(self, i: int) -> np.ndarray:
        """All writes of read i's item, in end order."""
        lo = self.group_lo[i]
        hi = np.searchsorted(self.key_by_end, self.r_key[i], side="right")
        return self.writes[self.by_end[lo:hi]]

    def overlapping_writes(self, i: int) -> np.ndarray:
        w = self.item_writes(i)
        r = self.reads[i]
        return w[(w["end"] >= r["start"]) & (w["start"] <= r["end"])]

    def before_writes(self, i: int) -> np.ndarray:
        return self.writes[self.by_end[self.group_lo[i] : self.ended[i]]]
