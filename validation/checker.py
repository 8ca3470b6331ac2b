"""The checker: a pure function (initial values, log records) -> verdict (Jepsen style).

Each item takes either delta writes or absolute writes, never both; reads of items
never written must see their initial value. Results come per read (a flag and, for
unpredictable reads, a lag), per session, per item kind and per action.

Every step is vectorised over all reads (bgbench.validation.index, delta, absolute, lag);
Python runs per read only to describe the unpredictable reads asked for, and for the rare
read whose overlapping delta writes are not all +1/-1 (subset sums).
"""

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bgbench.validation.absolute import absolute_mask
from bgbench.validation.delta import delta_mask
from bgbench.validation.index import WriteIndex
from bgbench.validation.initial import InitialValues
from bgbench.validation.lag import lags_ns
from bgbench.validation.logformat import READ, WRITE, WRITE_ABS
from bgbench.validation.phases import PhaseClock, PhaseCounts, count_reads
from bgbench.validation.visibility import Visibility, visibility

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
    examples: list[dict[str, Any]] = field(default_factory=list)  # a few unpredictable reads
    # Filled on request, for merging parts and for per-read output:
    session_ids: np.ndarray | None = None  # distinct sessions that read
    bad_session_ids: np.ndarray | None = None
    unpredictable: list[dict[str, Any]] = field(default_factory=list)  # every unpredictable read
    phases: PhaseCounts | None = None  # per phase and time bin, when a PhaseClock was given

    def __post_init__(self) -> None:
        # Not a field: the counts above are the checker's verdict (compared field by field
        # with the reference checker in the tests); this is a further analysis of the writes.
        self.visibility: Visibility = Visibility()

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
        self.visibility.merge(other.visibility)
        if other.phases is not None:
            if self.phases is None:
                self.phases = PhaseCounts.empty(len(other.phases.reads))
            self.phases.merge(other.phases)


@dataclass
class Checked:
    ix: WriteIndex
    init: np.ndarray  # per read (index order): its item's initial value
    bad: np.ndarray  # per read (index order): unpredictable
    absolute_items: np.ndarray  # per item: takes absolute writes


def check(records: np.ndarray, initial: InitialValues) -> Checked:
    """Flag every read that no serial order of the overlapping writes explains."""
    kinds = records["kind"]
    unknown = np.flatnonzero(np.bincount(kinds, minlength=3)[3:])
    if len(unknown):
        raise ValueError(f"unknown record kind {int(unknown[0]) + 3} in the log")
    ix = WriteIndex.build(records, kinds == READ)
    init = _initial_per_read(ix, initial)
    if ix.items.count > 1 << 31:
        raise ValueError("too many distinct items for one in-memory pass: split the logs")
    absolute_items = _absolute_items(ix)
    on_absolute = absolute_items[ix.r_item]
    observed = records["value"][ix.read_pos][ix.read_order]
    bad = delta_mask(ix, init, observed, ~on_absolute) | absolute_mask(
        ix, init, observed, on_absolute
    )
    return Checked(ix, init, bad, absolute_items)


def validate(
    records: np.ndarray,
    initial: InitialValues,
    max_examples: int = 10,
    keep_sessions: bool = False,
    keep_reads: bool = False,
    clock: PhaseClock | None = None,
) -> ValidationResult:
    """Count reads and sessions that no serial order of the overlapping writes explains;
    with `clock`, also per phase and time bin of the run (validation/phases.py)."""
    checked = check(records, initial)
    ix, init = checked.ix, checked.init
    result = ValidationResult(reads=len(ix.read_pos), writes=len(ix.write_pos))
    result.visibility = visibility(ix, init, checked.bad, checked.absolute_items)
    if clock is not None:
        result.phases = PhaseCounts.empty(clock.phases)
    if len(ix.read_pos) == 0:
        if keep_sessions:
            result.session_ids = result.bad_session_ids = np.empty(0, np.int64)
        return result
    # the unpredictable reads in log order
    sel = np.flatnonzero(checked.bad)
    sel = sel[np.argsort(ix.read_order[sel], kind="stable")]
    rows = ix.r_row[sel]
    result.unpredictable_reads = len(sel)
    session = records["session"][ix.read_pos]
    sessions = distinct(session)
    bad_sessions = distinct(records["session"][rows])
    result.sessions, result.unpredictable_sessions = len(sessions), len(bad_sessions)
    if keep_sessions:
        result.session_ids, result.bad_session_ids = sessions, bad_sessions
    result.reads_by_item = _counts(records["item"][ix.read_pos])
    result.unpredictable_by_item = _counts(records["item"][rows])
    result.reads_by_action = _counts(records["action"][ix.read_pos])
    result.unpredictable_by_action = _counts(records["action"][rows])
    absolute = checked.absolute_items[ix.r_item[sel]]
    lags = lags_ns(ix, sel, init[sel], records["value"][rows], absolute)
    result.never_valid = sum(lag is None for lag in lags)
    result.lags_ms = [lag / 1e6 for lag in lags if lag is not None]
    if clock is not None:
        starts = records["start"]
        result.phases = count_reads(clock, starts[ix.read_pos], starts[rows], lags)
    described = len(sel) if keep_reads else min(max_examples, len(sel))
    for j in range(described):
        read = describe_read(records[rows[j]], int(init[sel[j]]), lags[j])
        if j < max_examples:
            result.examples.append(read)
        if keep_reads:
            result.unpredictable.append(read)
    return result


def _initial_per_read(ix: WriteIndex, initial: InitialValues) -> np.ndarray:
    """Initial value of each read's item (index order): looked up once per item read."""

    def every_read() -> np.ndarray:
        return initial.lookup(ix.records["item"][ix.read_pos], ix.records["item_id"][ix.read_pos])

    if ix.items.kind is None:  # items numbered by sorting their keys: look up every read
        in_order: np.ndarray = every_read()[ix.read_order]
        return in_order
    assert ix.items.item_id is not None  # set together with ix.items.kind
    read = np.flatnonzero(np.bincount(ix.r_item, minlength=ix.items.count))
    try:
        values = initial.lookup(ix.items.kind[read], ix.items.item_id[read])
    except ValueError:
        every_read()  # raises the same error, naming the first read that has none
        raise
    per_item = np.zeros(ix.items.count, dtype=np.int64)
    per_item[read] = values
    per_read: np.ndarray = per_item[ix.r_item]
    return per_read


def _absolute_items(ix: WriteIndex) -> np.ndarray:
    """Per item: does it take absolute writes? (Refuses items that take both kinds.)"""
    kinds = ix.records["kind"][ix.write_pos]
    absolute = np.bincount(ix.w_item[kinds == WRITE_ABS], minlength=ix.items.count) > 0
    delta = np.bincount(ix.w_item[kinds == WRITE], minlength=ix.items.count) > 0
    mixed = np.flatnonzero(absolute & delta)
    if len(mixed):
        w = ix.records[ix.write_pos[np.flatnonzero(ix.w_item == mixed[0])[0]]]
        raise ValueError(
            f"item kind {int(w['item'])} id {int(w['item_id'])} has both delta and absolute writes"
        )
    return absolute


def describe_read(r: np.void, initial: int, lag: int | None) -> dict[str, Any]:
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
    """np.unique by sorting (numpy's hash-based unique is slower on large int arrays). Session
    ids come in long ascending runs (each thread's), which a stable sort merges in near-linear
    time; it is much slower than the default sort on values in no order, so count the runs."""
    runs = np.count_nonzero(values[1:] < values[:-1]) + 1
    s = np.sort(values, kind="stable" if runs * 64 <= len(values) else None)
    return s[np.concatenate([[True], s[1:] != s[:-1]])] if len(s) else s


def _counts(values: np.ndarray) -> dict[int, int]:
    if len(values) == 0:
        return {}
    counts = np.bincount(values.astype(np.int64))  # item kinds and actions are small codes
    return {k: int(c) for k, c in enumerate(counts.tolist()) if c}
