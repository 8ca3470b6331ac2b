"""Validation of whole log sets: in memory across cores, or out of core through DuckDB.

Logs of different items are independent, so records are split by item: in memory
into one part per core (validated in forked processes), out of core into chunks
of items that fit the memory budget, fetched one at a time from an on-disk DuckDB
table (the paper's "persistent store" variant). Both paths run the same checker
on each part and merge the counts; sessions are merged as sets, since one session
reads several items. Results are identical by construction.

The paths given are ONE history against one set of initial values (one fragment of one
experiment: item and session ids are only unique within it). Logs of different
experiments or fragments are validated apart and their counts added
(bgbench.coordinator.execution.offline does that).
"""

import multiprocessing as mp
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bgbench.validation.checker import ValidationResult, validate
from bgbench.validation.initial import InitialValues
from bgbench.validation.logformat import RECORD_DTYPE, iter_blocks, read_logs
from bgbench.validation.phases import PhaseClock

# In-memory validation holds the records plus the index arrays built over them:
# measured peak is about 6x the raw log size (benchmarks/README.md); 8x leaves room.
MEMORY_PER_LOG_BYTE = 8
DEFAULT_BUDGET = 2 << 30
_MIX = np.uint64(0x9E3779B97F4A7C15)
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
    engine: str  # "memory" or "duckdb"
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


def _chunks_of(paths: list[Path], size: int) -> Iterator[np.ndarray]:
    """The logs' records in chunks of about `size`, streamed block by block."""
    pending: list[np.ndarray] = []
    held = 0
    for path in paths:
        for block in iter_blocks(path):
            pending.append(block)
            held += len(block)
            if held >= size:
                yield np.concatenate(pending)
                pending, held = [], 0
    if pending:
        yield np.concatenate(pending)


def validate_out_of_core(
    paths: list[Path],
    initial: InitialValues,
    budget_bytes: int,
    work_dir: Path | None = None,
    keep_reads: bool = False,
    clock: PhaseClock | None = None,
) -> tuple[ValidationResult, int]:
    """Validate logs larger than memory: load them into DuckDB, then check item chunks."""
    import duckdb
    import pyarrow as pa

    chunk_records = max(10_000, budget_bytes // (RECORD_DTYPE.itemsize * MEMORY_PER_LOG_BYTE))
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        db = duckdb.connect(str(Path(tmp) / "logs.duckdb"))
        db.execute(f"SET memory_limit = '{max(budget_bytes // 2, 64 << 20)}B'")
        db.execute(f"SET temp_directory = '{tmp}'")
        db.execute("SET preserve_insertion_order = false")
        fields = RECORD_DTYPE.names
        assert fields is not None  # a structured dtype
        names = list(fields)
        columns = ", ".join(f'"{n}" {_sql_type(RECORD_DTYPE[n])}' for n in names)
        db.execute(f"CREATE TABLE logs ({columns}, key BIGINT)")
        for chunk in _chunks_of(paths, chunk_records):
            batch = pa.table(
                {
                    **{n: chunk[n] for n in names},
                    "key": chunk["item_id"].astype(np.int64) * 256 + chunk["item"],
                }
            )
            db.register("batch", batch)
            db.execute("INSERT INTO logs SELECT * FROM batch")
            db.unregister("batch")
        # Cut the item keys into chunks of about chunk_records records each.
        db.execute(
            f"""CREATE TABLE key_chunk AS
                SELECT key, (sum(n) OVER (ORDER BY key) - 1) // {chunk_records} AS chunk
                FROM (SELECT key, count(*) AS n FROM logs GROUP BY key)"""
        )
        db.execute(
            "CREATE TABLE chunked AS SELECT l.*, c.chunk FROM logs l JOIN key_chunk c USING (key)"
            " ORDER BY c.chunk"
        )
        db.execute("DROP TABLE logs")
        counted = db.execute("SELECT coalesce(max(chunk), -1) + 1 FROM key_chunk").fetchone()
        assert counted is not None  # an aggregate: always one row
        n_chunks = counted[0]
        db.execute("CREATE TABLE sessions (session BIGINT, bad BOOLEAN)")
        result = ValidationResult()
        select = ", ".join(f'"{n}"' for n in names)
        for c in range(n_chunks):
            cols = db.execute(f"SELECT {select} FROM chunked WHERE chunk = ?", [c]).fetchnumpy()
            records = np.empty(len(cols[names[0]]), dtype=RECORD_DTYPE)
            for n in names:
                records[n] = cols[n]
            del cols
            part = validate(
                records, initial, keep_sessions=True, keep_reads=keep_reads, clock=clock
            )
            assert part.session_ids is not None and part.bad_session_ids is not None
            seen = pa.table(
                {
                    "session": np.concatenate([part.session_ids, part.bad_session_ids]),
                    "bad": np.concatenate(
                        [
                            np.zeros(len(part.session_ids), bool),
                            np.ones(len(part.bad_session_ids), bool),
                        ]
                    ),
                }
            )
            db.register("seen", seen)
            db.execute("INSERT INTO sessions SELECT * FROM seen")
            db.unregister("seen")
            result.merge(part)
        counts = db.execute(
            "SELECT count(DISTINCT session) FILTER (WHERE NOT bad), "
            "count(DISTINCT session) FILTER (WHERE bad) FROM sessions"
        ).fetchone()
        assert counts is not None  # an aggregate: always one row
        total, bad = counts
        result.sessions, result.unpredictable_sessions = int(total), int(bad)
        db.close()
    return result, n_chunks


def _sql_type(dtype: np.dtype) -> str:
    return {1: "UTINYINT", 2: "USMALLINT", 8: "BIGINT"}[dtype.itemsize]


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
    workers, _ = usable_workers(workers, budget_bytes)
    log_bytes = sum(p.stat().st_size for p in paths)
    if log_bytes * MEMORY_PER_LOG_BYTE <= budget_bytes:
        records = read_logs(paths)
        used = workers if len(records) >= PARALLEL_FROM else 1
        result = validate_in_memory(records, initial, used, keep_reads, clock)
        parts = max(used, -(-len(records) // PART_RECORDS))
        return result, RunInfo("memory", parts, used, len(records), log_bytes)
    result, chunks = validate_out_of_core(paths, initial, budget_bytes, work_dir, keep_reads, clock)
    return result, RunInfo("duckdb", chunks, 1, result.reads + result.writes, log_bytes)
