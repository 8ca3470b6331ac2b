"""Validation of whole log sets: in memory across cores, or out of core in spill files.

Logs of different items are independent, so records are split by item: in memory
into one part per core (validated in forked processes), out of core into spill files
of items that fit the memory budget, read back one at a time (bgbench.validation.spill:
the paper's "persistent store" variant). Both paths run the same checker on each part
and merge the counts; sessions are merged as sets, since one session reads several
items. Results are identical by construction.

The paths given are ONE history against one set of initial values (one fragment of one
experiment: item and session ids are only unique within it). Logs of different
experiments or fragments are validated apart and their counts added
(bgbench.coordinator.execution.offline does that).
"""

import multiprocessing as mp
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bgbench.validation.checker import ValidationResult, validate
from bgbench.validation.initial import InitialValues
from bgbench.validation.logformat import RECORD_DTYPE, read_logs
from bgbench.validation.phases import PhaseClock
from bgbench.validation.spill import MIN_PART_RECORDS, validate_spilled

# In-memory validation holds the records plus the index arrays built over them:
# measured peak is about 6x the raw log size (benchmarks/README.md); 8x leaves room.
MEMORY_PER_LOG_BYTE = 8
DEFAULT_BUDGET = 2 << 30
_MIX = np.uint64(0x9E3779B97F4A7C15)
OUT_OF_CORE = "out-of-core"  # the engine's name in reports (RunInfo.engine)
PARALLEL_FROM = 200_000  # records; below this, forking costs more than it saves


def usable_workers(requested: int | None, budget_bytes: int) -> tuple[int, str]:
    """Processes to validate with: as asked (default: every core this process may use), but
    never more than those cores nor than the memory budget holds parts for (each worker
    copies a part of about PART_RECORDS records and builds its indexes over it). Also why
    fewer than asked, e.g. "--workers 32 capped at 2 (cores)", or ""."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = max(1, cores or 1)
    by_memory = max(1, budget_bytes // (PART_RECORDS * RECORD_DTYPE.itemsize * MEMORY_PER_LOG_BYTE))
    usable = min(cores, by_memory)
    if requested is None or requested <= usable:
        return min(requested or usable, usable), ""
    why = "cores" if usable == cores else "memory budget"
    return usable, f"--workers {requested} capped at {usable} ({why})"


@dataclass
class RunInfo:
    engine: str  # "memory" or OUT_OF_CORE
    parts: int
    workers: int
    records: int
    log_bytes: int


def item_partition(records: np.ndarray, parts: int) -> np.ndarray:
    """Part of each record: a multiplicative hash of (item_id << 8 | item), computed in place
    (each temporary of a large log would be another pass over fresh memory)."""
    keys = records["item_id"].astype(np.uint64)
    np.left_shift(keys, np.uint64(8), out=keys)
    np.bitwise_or(keys, records["item"], out=keys, casting="unsafe")
    np.multiply(keys, _MIX, out=keys)
    np.right_shift(keys, np.uint64(40), out=keys)
    np.remainder(keys, np.uint64(parts), out=keys)
    return keys


def _finish(result: ValidationResult, sessions: list[np.ndarray], bad: list[np.ndarray]) -> None:
    result.sessions, result.unpredictable_sessions = _union_size(sessions), _union_size(bad)
    result.session_ids = result.bad_session_ids = None


def _union_size(parts: list[np.ndarray]) -> int:
    """How many distinct values the arrays hold together: marked in a bitmap when they span a
    small range, else counted after a sort (numpy's np.unique hashes, several times slower)."""
    values = np.concatenate(parts) if parts else np.empty(0, np.int64)
    if len(values) == 0:
        return 0
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < 4 * len(values) + (1 << 20):
        seen = np.zeros(hi - lo + 1, dtype=bool)
        seen[values - lo] = True
        return int(np.count_nonzero(seen))
    values.sort()
    return int(np.count_nonzero(values[1:] != values[:-1])) + 1


# -- in memory ------------------------------------------------------------------------------

_SHARED: dict[str, Any] = {}
PART_RECORDS = 500_000  # records per part: small parts keep the sorts and searches in cache


def _part(index: int) -> np.ndarray:
    records, order, bounds = _SHARED["records"], _SHARED["order"], _SHARED["bounds"]
    # np.take copies whole records; indexing a structured array goes field by field (10x slower)
    part: np.ndarray = np.take(records, order[bounds[index] : bounds[index + 1]])
    return part


def _validate_part(index: int) -> ValidationResult:
    return validate(
        _part(index),
        _SHARED["initial"],
        keep_sessions=True,
        keep_reads=_SHARED["keep_reads"],
        clock=_SHARED["clock"],
    )


def validate_in_memory(
    records: np.ndarray,
    initial: InitialValues,
    workers: int = 1,
    keep_reads: bool = False,
    clock: PhaseClock | None = None,
) -> ValidationResult:
    """Split by item into parts of about PART_RECORDS records, validated on `workers` cores."""
    parts = max(workers, -(-len(records) // PART_RECORDS))
    if parts <= 1:
        return validate(records, initial, keep_reads=keep_reads, clock=clock)
    # int16 part numbers let numpy's stable argsort use radix sort: linear in the records
    owner = item_partition(records, parts).astype(np.int16 if parts < 1 << 15 else np.int32)
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(parts + 1))
    _SHARED.update(
        records=records,
        order=order,
        bounds=bounds,
        initial=initial,
        keep_reads=keep_reads,
        clock=clock,
    )
    try:
        if workers <= 1:
            results = [_validate_part(p) for p in range(parts)]
        else:
            results = _validate_forked(parts, workers)
    finally:
        _SHARED.clear()
    return _merge(results)


def _validate_forked(parts: int, workers: int) -> list[ValidationResult]:
    """Parts p with p % workers == 0 here, the others in workers - 1 forked children (fork:
    they read the parts from this process's memory, never pickled). This process takes a
    share rather than waiting idle. Either side pays page faults on its first part after the
    fork (fresh or copy-on-write pages), so forking pays only over several parts each."""
    theirs = [p for p in range(parts) if p % workers]
    done: dict[int, ValidationResult] = {}
    with mp.get_context("fork").Pool(workers - 1) as pool:
        pending = pool.map_async(_validate_part, theirs, chunksize=1)
        for p in range(0, parts, workers):
            done[p] = _validate_part(p)
        done.update(zip(theirs, pending.get(), strict=True))
    return [done[p] for p in range(parts)]


def _merge(parts: list[ValidationResult]) -> ValidationResult:
    result = ValidationResult()
    sessions, bad = [], []
    for p in parts:
        result.merge(p)
        sessions.append(p.session_ids if p.session_ids is not None else np.empty(0, np.int64))
        bad.append(p.bad_session_ids if p.bad_session_ids is not None else np.empty(0, np.int64))
    _finish(result, sessions, bad)
    return result


# -- out of core ----------------------------------------------------------------------------


def validate_out_of_core(
    paths: list[Path],
    initial: InitialValues,
    budget_bytes: int,
    work_dir: Path | None = None,
    keep_reads: bool = False,
    clock: PhaseClock | None = None,
    workers: int = 1,
) -> tuple[ValidationResult, int]:
    """Validate logs larger than memory: spilled by item into parts that fit the budget,
    each checked in memory (bgbench.validation.spill); (result, parts validated)."""
    return validate_spilled(paths, initial, budget_bytes, workers, work_dir, keep_reads, clock)


# -- choosing -------------------------------------------------------------------------------


def validate_logs(
    paths: list[Path],
    initial: InitialValues,
    budget_bytes: int = DEFAULT_BUDGET,
    workers: int | None = None,
    keep_reads: bool = False,
    work_dir: Path | None = None,
    clock: PhaseClock | None = None,
) -> tuple[ValidationResult, RunInfo]:
    """Validate the logs in memory when they fit the budget, else out of core; with
    `clock`, also per phase and time bin of the run."""
    log_bytes = sum(p.stat().st_size for p in paths)
    if log_bytes * MEMORY_PER_LOG_BYTE <= budget_bytes:
        workers, _ = usable_workers(workers, budget_bytes)
        records = read_logs(paths)
        used = workers if len(records) >= PARALLEL_FROM else 1
        result = validate_in_memory(records, initial, used, keep_reads, clock)
        parts = max(used, -(-len(records) // PART_RECORDS))
        return result, RunInfo("memory", parts, used, len(records), log_bytes)
    used = spill_workers(workers, budget_bytes)
    result, parts = validate_out_of_core(
        paths, initial, budget_bytes, work_dir, keep_reads, clock, used
    )
    return result, RunInfo(OUT_OF_CORE, parts, used, result.reads + result.writes, log_bytes)


def spill_workers(requested: int | None, budget_bytes: int) -> int:
    """Processes to validate spill files with: as asked (default: every core), each with a
    part of at least MIN_PART_RECORDS records within its share of the budget."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    smallest = MIN_PART_RECORDS * RECORD_DTYPE.itemsize * MEMORY_PER_LOG_BYTE
    return max(1, min(requested or cores or 1, cores or 1, budget_bytes // smallest))
