"""Validation out of core: the logs split by item into spill files that each fit the memory
budget, then every file validated in memory by the same checker as the in-memory path.

Items are independent (a read is judged against the writes of its own item), so a
partition of the records by item, validated part by part with the counts added, gives
what one pass over all of them gives. Pass 1 streams the logs block by block into a
buffer; each full buffer is hashed by item (splitmix64 of item_id << 8 | item: every record
of an item lands in the same file), put in partition order by a radix sort and appended to
the partitions' files. Pass 2 reads one file at a time (on `workers` forked processes, each
reading its own); a file that came out larger than a part (hash variance, a hot item) is
split again with another salt, unless it holds one item only (an item's history cannot be
split). Sessions read items of several parts: each part's distinct session ids are
spilled by session hash, and the distinct ones counted file by file at the end.

Memory: the buffer and one part per process, each at most `part_records` records (the
budget over MEMORY_PER_LOG_BYTE per record byte), and one session file at the end.
"""

import itertools
import multiprocessing as mp
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bgbench.validation.checker import ValidationResult, validate
from bgbench.validation.initial import InitialValues
from bgbench.validation.logformat import RECORD_DTYPE, inspect_log, iter_blocks
from bgbench.validation.phases import PhaseClock

MEMORY_PER_LOG_BYTE = 8  # as the in-memory path: records plus the indexes built over them
PART_RECORDS = 500_000  # as the in-memory path: parts this small keep the sorts in cache
MIN_PART_RECORDS = 10_000  # below this a part's fixed cost dominates, whatever the budget
MAX_FAN_OUT = 256  # files written at once; a larger split goes a level deeper
MAX_LEVELS = 8  # splits of one part's records; only a hash that never separates them stops
HEADROOM = 1.5  # partitions per part's worth of records: hashes do not split evenly
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def part_records_for(budget_bytes: int, workers: int) -> int:
    """Records per part: each of `workers` processes holds one with its indexes."""
    by_budget = budget_bytes // (RECORD_DTYPE.itemsize * MEMORY_PER_LOG_BYTE * max(1, workers))
    return int(max(MIN_PART_RECORDS, min(PART_RECORDS, by_budget)))


def _mixed(keys: np.ndarray, salt: int) -> np.ndarray:
    """splitmix64's finaliser of keys + salt, in place (uint64 keys); every bit of the
    result depends on every bit of the key, so a new salt splits a part afresh."""
    keys += np.uint64((0x9E3779B97F4A7C15 * (salt + 1)) & 0xFFFFFFFFFFFFFFFF)
    keys ^= keys >> np.uint64(30)
    keys *= _MIX1
    keys ^= keys >> np.uint64(27)
    keys *= _MIX2
    keys ^= keys >> np.uint64(31)
    return keys


def item_keys(records: np.ndarray) -> np.ndarray:
    """Each record's item as one uint64: item_id << 8 | item."""
    keys = records["item_id"].astype(np.uint64)
    keys <<= np.uint64(8)
    keys |= records["item"]
    return keys


def partition_of(keys: np.ndarray, salt: int, parts: int) -> np.ndarray:
    """Each key's partition in [0, parts), by its salted hash (int16: a radix sort orders it)."""
    mixed = _mixed(keys.copy(), salt)
    mixed %= np.uint64(parts)
    return mixed.astype(np.int16)


class SpillFiles:
    """`parts` files records are appended to, each record to its partition's file."""

    def __init__(self, directory: Path, name: str, parts: int) -> None:
        self.paths = [directory / f"{name}-{p}.bin" for p in range(parts)]
        self._files = [open(p, "wb") for p in self.paths]  # noqa: SIM115 - closed in close()
        self.sizes = np.zeros(parts, dtype=np.int64)

    def append(self, values: np.ndarray, part: np.ndarray) -> None:
        """values[i] to the file of part[i]."""
        order = np.argsort(part, kind="stable")  # radix sort of int16: linear
        counts = np.bincount(part, minlength=len(self.paths))
        ordered = np.take(values, order)
        bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
        for p in np.flatnonzero(counts).tolist():
            ordered[bounds[p] : bounds[p + 1]].tofile(self._files[p])
        self.sizes += counts

    def close(self) -> None:
        for f in self._files:
            f.close()


@dataclass
class Part:
    """A spilled part of the records: its file, its record count, the salt its split used."""

    path: Path
    records: int
    level: int


def _buffered(blocks: Iterator[np.ndarray], size: int) -> Iterator[np.ndarray]:
    """The blocks' records regrouped into arrays of `size` (the last shorter), copied into
    one buffer reused for every group."""
    buffer = np.empty(size, dtype=RECORD_DTYPE)
    held = 0
    for block in blocks:
        lo = 0
        while lo < len(block):
            take = min(size - held, len(block) - lo)
            buffer[held : held + take] = block[lo : lo + take]
            held, lo = held + take, lo + take
            if held == size:
                yield buffer
                held = 0
    if held:
        yield buffer[:held]


def _split(
    batches: Iterator[np.ndarray], records: int, part_records: int, level: int, directory: Path
) -> list[Part]:
    """The batches' records spilled by item into files of about part_records each."""
    parts = int(min(MAX_FAN_OUT, max(1, np.ceil(records * HEADROOM / part_records))))
    files = SpillFiles(directory, f"l{level}-{next(_NAMES)}", parts)
    try:
        for batch in batches:
            files.append(batch, partition_of(item_keys(batch), level, parts))
    finally:
        files.close()
    out = []
    for path, size in zip(files.paths, files.sizes.tolist(), strict=True):
        if size:
            out.append(Part(path, size, level))
        else:
            path.unlink()
    return out


_NAMES = itertools.count()  # spill file names, unique within the process


def _load(part: Part) -> np.ndarray:
    records = np.fromfile(part.path, dtype=RECORD_DTYPE)
    part.path.unlink()  # its disk space back as soon as it is in memory
    return records


def _one_item(records: np.ndarray) -> bool:
    keys = item_keys(records)
    return bool((keys == keys[0]).all())


_TASK: dict[str, Any] = {}


def _validate_file(part: Part) -> ValidationResult:
    return validate(
        _load(part),
        _TASK["initial"],
        keep_sessions=True,
        keep_reads=_TASK["keep_reads"],
        clock=_TASK["clock"],
    )


class SessionSpill:
    """Each part's distinct session ids (and the unpredictable ones), spilled by session
    hash so that one file at a time holds every occurrence of its sessions."""

    def __init__(self, directory: Path, parts: int) -> None:
        self.parts = max(1, min(MAX_FAN_OUT, parts))
        self.all = SpillFiles(directory, "sessions", self.parts)
        self.bad = SpillFiles(directory, "bad-sessions", self.parts)

    def add(self, result: ValidationResult) -> None:
        for ids, files in ((result.session_ids, self.all), (result.bad_session_ids, self.bad)):
            if ids is not None and len(ids):
                files.append(ids, partition_of(ids.astype(np.uint64), 0, self.parts))
        result.session_ids = result.bad_session_ids = None

    def distinct(self) -> tuple[int, int]:
        """(distinct sessions, distinct unpredictable sessions)."""
        self.all.close()
        self.bad.close()
        counts = []
        for files in (self.all, self.bad):
            n = 0
            for path in files.paths:
                n += _distinct_count(np.fromfile(path, dtype=np.int64))
                path.unlink()
            counts.append(n)
        return counts[0], counts[1]


def _distinct_count(values: np.ndarray) -> int:
    if len(values) == 0:
        return 0
    values.sort()
    return int(np.count_nonzero(values[1:] != values[:-1])) + 1


def _settle(parts: list[Part], part_records: int) -> tuple[list[Part], list[Part]]:
    """(parts that fit, parts to split again): a part over part_records is split again
    unless it holds one item or its records have been split MAX_LEVELS times."""
    fit: list[Part] = []
    over: list[Part] = []
    for p in parts:
        (over if p.records > part_records and p.level + 1 < MAX_LEVELS else fit).append(p)
    return fit, over


def _resplit(part: Part, part_records: int, directory: Path) -> list[Part]:
    records = _load(part)
    if _one_item(records):
        path = directory / f"whole-{next(_NAMES)}.bin"
        records.tofile(path)
        return [Part(path, len(records), MAX_LEVELS)]
    batches = (records[lo : lo + part_records] for lo in range(0, len(records), part_records))
    return _split(batches, len(records), part_records, part.level + 1, directory)


def validate_spilled(
    paths: list[Path],
    initial: InitialValues,
    budget_bytes: int,
    workers: int = 1,
    work_dir: Path | None = None,
    keep_reads: bool = False,
    clock: PhaseClock | None = None,
) -> tuple[ValidationResult, int]:
    """(the logs' validation, parts validated): out of core, in parts that fit the budget."""
    total = sum(inspect_log(p).records for p in paths)
    part_records = part_records_for(budget_bytes, workers)
    blocks = (block for path in paths for block in iter_blocks(path))
    result = ValidationResult()
    with tempfile.TemporaryDirectory(dir=work_dir, prefix="bgbench-spill-") as tmp:
        directory = Path(tmp)
        todo = _split(_buffered(blocks, part_records), total, part_records, 0, directory)
        sessions = SessionSpill(directory, len(todo))
        done = 0
        while todo:
            fit, over = _settle(todo, part_records)
            for r in _validated(fit, workers, initial, keep_reads, clock):
                sessions.add(r)
                result.merge(r)
            done += len(fit)
            todo = [q for p in over for q in _resplit(p, part_records, directory)]
        result.sessions, result.unpredictable_sessions = sessions.distinct()
    return result, done


def _validated(
    parts: list[Part],
    workers: int,
    initial: InitialValues,
    keep_reads: bool,
    clock: PhaseClock | None,
) -> Iterator[ValidationResult]:
    """Each part's result, in the order of `parts`; forked workers read their own files."""
    _TASK.update(initial=initial, keep_reads=keep_reads, clock=clock)
    try:
        if workers <= 1 or len(parts) <= 1:
            yield from map(_validate_file, parts)
            return
        with mp.get_context("fork").Pool(min(workers, len(parts))) as pool:
            yield from pool.imap(_validate_file, parts, chunksize=1)
    finally:
        _TASK.clear()
