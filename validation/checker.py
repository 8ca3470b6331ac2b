"""The checker: a pure function (initial values, log records) -> verdict (Jepsen style).

Each item takes either delta writes or absolute writes, never both; reads of items
never written must see their initial value. Results come per read (a flag and, for
unpredictable reads, a lag), per session, per item kind and per action.
"""

from dataclasses import dataclass, field

import numpy as np

from bgbench.validation.absolute import absolute_mask
from bgbench.validation.delta import delta_mask
from bgbench.validation.index import WriteIndex
from bgbench.validation.initial import InitialValues
from bgbench.validation.lag import lag_ns
from bgbench.validation.logformat import READ, WRITE, WRITE_ABS

__all__ = ["InitialValues", "ValidationResult", "check", "validate"]


@dataclass
class ValidationResult:
    reads: int = 0
    unpredictable_reads: int = 0
    writes: int = 0
    sessions: int = 0  # sessions that read at least one tracked item
    unpredictable_sessions: int = 0
    reads_by_item: dict[int, int] = field(default_factory=dict)
    unpredictable_by_item: dict[int, int] = field(default_factory=dict)
    reads_by_action: dict[int, int] = field(default_factory=dict)
    unpredictable_by_action: dict[int, int] = field(default_factory=dict)
    lags_ms: list[float] = field(default_factory=list)  # one per unpredictable read with a lag
    never_valid: int = 0  # unpredictable reads of a value the item never held
    examples: list[dict] = field(default_factory=list)  # a few unpredictable reads
    # Filled on request, for merging parts and for per-read output:
    session_ids: np.ndarray | None = None  # distinct sessions that read
    bad_session_ids: np.ndarray | None = None
    unpredictable: list[dict] = field(default_factory=list)  # every unpredictable read

    @property
    def unpredictable_percent(self) -> float:
        return 100.0 * self.unpredictable_reads / self.reads if self.reads else 0.0

    def lag_summary(self) -> dict[str, float | None]:
        if not self.lags_ms:
            return {"p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
        a = np.asarray(self.lags_ms)
        return {
            "p50_ms": float(np.percentile(a, 50)),
            "p95_ms": float(np.percentile(a, 95)),
            "p99_ms": float(np.percentile(a, 99)),
            "max_ms": float(a.max()),
        }

    def merge(self, other: "ValidationResult", max_examples: int = 10) -> None:
        """Add another disjoint set of items' result (sessions are counted per part)."""
        for name in ("reads", "unpredictable_reads", "writes", "sessions",
                     "unpredictable_sessions", "never_valid"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("reads_by_item", "unpredictable_by_item", "reads_by_action",
                     "unpredictable_by_action"):  # fmt: skip
            mine = getattr(self, name)
            for k, v in getattr(other, name).items():
                mine[k] = mine.get(k, 0) + v
        self.lags_ms += other.lags_ms
        self.examples = (self.examples + other.examples)[:max_examples]
        self.unpredictable += other.unpredictable


def check(records: np.ndarray, initial: InitialValues) -> tuple[np.ndarray, np.ndarray, WriteIndex]:
    """(reads, unpredictable flag per read, index) for a set of log records."""
    reads = records[records["kind"] == READ]
    writes = records[(records["kind"] == WRITE) | (records["kind"] == WRITE_ABS)]
    unknown = np.setdiff1d(np.unique(records["kind"]), [READ, WRITE, WRITE_ABS])
    if len(unknown):
        raise ValueError(f"unknown record kind {int(unknown[0])} in the log")
    init = initial.lookup(reads["item"], reads["item_id"])
    ix = WriteIndex.build(reads, writes)
    n_items = int(max(ix.r_key.max(initial=-1), ix.w_key.max(initial=-1))) + 1
    absolute_items = np.bincount(ix.w_key[writes["kind"] == WRITE_ABS], minlength=n_items) > 0
    delta_items = np.bincount(ix.w_key[writes["kind"] == WRITE], minlength=n_items) > 0
    mixed = np.flatnonzero(absolute_items & delta_items)
    if len(mixed):
        w = writes[ix.w_key == mixed[0]][0]
        raise ValueError(
            f"item kind {int(w['item'])} id {int(w['item_id'])} has both delta and absolute writes"
        )
    on_absolute = absolute_items[ix.r_key]
    bad = delta_mask(ix, init, ~on_absolute) | absolute_mask(ix, init, on_absolute)
    return reads, bad, ix


def validate(
    records: np.ndarray,
    initial: InitialValues,
    max_examples: int = 10,
    keep_sessions: bool = False,
    keep_reads: bool = False,
) -> ValidationResult:
    """Count reads and sessions that no serial order of the overlapping writes explains."""
    reads, bad, ix = check(records, initial)
    result = ValidationResult(reads=len(reads), writes=len(ix.writes))
    if len(reads) == 0:
        if keep_sessions:
            result.session_ids = result.bad_session_ids = np.empty(0, np.int64)
        return result
    init = initial.lookup(reads["item"], reads["item_id"])
    result.unpredictable_reads = int(bad.sum())
    sessions = distinct(reads["session"])
    bad_sessions = distinct(reads["session"][bad])
    result.sessions, result.unpredictable_sessions = len(sessions), len(bad_sessions)
    if keep_sessions:
        result.session_ids, result.bad_session_ids = sessions, bad_sessions
    result.reads_by_item = _counts(reads["item"])
    result.unpredictable_by_item = _counts(reads["item"][bad])
    result.reads_by_action = _counts(reads["action"])
    result.unpredictable_by_action = _counts(reads["action"][bad])
    absolute = _absolute_items(ix)[ix.r_key] if len(ix.writes) else np.zeros(len(reads), bool)
    for i in np.flatnonzero(bad).tolist():
        r = reads[i]
        lag = lag_ns(ix, i, int(init[i]), bool(absolute[i]))
        if lag is None:
            result.never_valid += 1
        else:
            result.lags_ms.append(lag / 1e6)
        if len(result.examples) < max_examples or keep_reads:
            described = describe_read(r, int(init[i]), lag)
            if len(result.examples) < max_examples:
                result.examples.append(described)
            if keep_reads:
                result.unpredictable.append(described)
    return result


def _absolute_items(ix: WriteIndex) -> np.ndarray:
    n = int(max(ix.r_key.max(initial=-1), ix.w_key.max(initial=-1))) + 1
    return np.bincount(ix.w_key[ix.writes["kind"] == WRITE_ABS], minlength=n) > 0


def describe_read(r: np.void, initial: int, lag: int | None) -> dict:
    return {
        "item": int(r["item"]),
        "item_id": int(r["item_id"]),
        "start": int(r["start"]),
        "end": int(r["end"]),
        "observed": int(r["value"]),
        "initial": initial,
        "action": int(r["action"]),
        "session": int(r["session"]),
        "thread": int(r["thread"]),
        "lag_ms": None if lag is None else lag / 1e6,
    }


def distinct(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting (numpy's hash-based unique is slower on large int arrays)."""
    s = np.sort(values)
    return s[np.concatenate([[True], s[1:] != s[:-1]])] if len(s) else s


def _counts(values: np.ndarray) -> dict[int, int]:
    if len(values) == 0:
        return {}
    counts = np.bincount(values.astype(np.int64))  # item kinds and actions are small codes
    return {k: int(c) for k, c in enumerate(counts.tolist()) if c}
