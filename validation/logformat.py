"""Binary read/write logs: one file per fragment per experiment.

Layout (version 2): an 8-byte magic, then blocks, then a trailer.
  block    12-byte header (b"BGBK", record count u32, CRC32 of the count's 4 bytes and the
           records) followed by at most BLOCK_RECORDS fixed-size little-endian records
           (RECORD_DTYPE)
  trailer  record count u64, block count u32, CRC32 of those 12 bytes, b"BGLOGEND"
Every read checks each block's checksum, that the blocks add up to the trailer, that each
record is possible and that the records hold together as a genuine log's do (each thread's
starts in order, no record twice, deltas that cannot overflow: validation.records), so a
block or record forged with a valid checksum is refused; every error names the file and
the byte offset. A failed write (a full disk) raises LogWriteError naming the file and
leaves the log without its trailer. A file without its trailer was never closed (its
experiment did not finish): UnfinishedLogError, so callers can tell it from corruption.

Version 1 files (no blocks, no checksums; a count and b"BGLOGEND" as the trailer) are still
read, with the same record checks.

A write whose outcome is unknown (the store raised) is logged with end = NEVER: it may take
effect at any time after its start, or not at all.
"""

import errno
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path

import numpy as np

from bgbench.errors import SystemFault, UserError
from bgbench.inputs import open_regular
from bgbench.validation.records import (
    NEVER,
    READ,
    RECORD_BYTES,
    RECORD_DTYPE,
    WRITE,
    WRITE_ABS,
    LogFormatError,
    RecordSequence,
    UnfinishedLogError,
    check_records,
)

__all__ = [
    "NEVER", "READ", "RECORD_BYTES", "RECORD_DTYPE", "WRITE", "WRITE_ABS", "LogFormatError",
    "LogWriteError", "LogWriter", "UnfinishedLogError", "check_records", "inspect_log",
    "iter_blocks", "read_log", "read_logs",
]  # fmt: skip

MAGIC = b"BGLOG\x00v2"
MAGIC_V1 = b"BGLOG\x00v1"
END_MAGIC = b"BGLOGEND"
BLOCK_MAGIC = b"BGBK"
BLOCK_HEADER = struct.Struct("<4sII")  # magic, records, crc32
TRAILER = struct.Struct("<QII8s")  # records, blocks, crc32 of the first 12 bytes, END_MAGIC
TRAILER_V1 = struct.Struct("<q8s")
BLOCK_RECORDS = 65_536  # records per block at most: one flush of a thread fits in one block


class LogWriteError(SystemFault):
    """A log (or its initial values) could not be written (a full disk, an I/O error): the
    infrastructure's fault on that file, never a verdict on the store; the message names the
    file and the OS error."""


def write_error(path: Path, error: OSError) -> LogWriteError:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        reason = f"disk full ({error.strerror})"
    else:
        reason = error.strerror or type(error).__name__
    return LogWriteError(f"{path}: cannot write it: {reason}")


class LogWriter:
    """Appends record batches as checksummed blocks; close() writes the trailer and fsyncs.

    A failed write or fsync raises LogWriteError, then and on every later call: the log is
    left without its trailer (unfinished), never closed as if it held what was appended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        self.blocks = 0
        self.failed: LogWriteError | None = None
        try:
            self._file = open(path, "wb")  # noqa: SIM115 - closed in close()
            self._file.write(MAGIC)
        except OSError as error:
            raise write_error(path, error) from None

    def _fail(self, error: OSError) -> LogWriteError:
        self.failed = self.failed or write_error(self.path, error)
        return self.failed

    def append(self, records: np.ndarray) -> None:
        if self.failed is not None:
            raise self.failed
        if records.dtype != RECORD_DTYPE:
            records = records.astype(RECORD_DTYPE)
        records = np.ascontiguousarray(records)
        try:
            for lo in range(0, len(records), BLOCK_RECORDS):
                payload = records[lo : lo + BLOCK_RECORDS].view(np.uint8).data  # a memoryview
                n = len(payload) // RECORD_BYTES
                crc = zlib.crc32(payload, zlib.crc32(n.to_bytes(4, "little")))
                self._file.write(BLOCK_HEADER.pack(BLOCK_MAGIC, n, crc))
                self._file.write(payload)
                self.count += n
                self.blocks += 1
        except OSError as error:
            raise self._fail(error) from None

    def append_rows(self, rows: list[tuple[int, ...]]) -> None:
        if rows:
            self.append(np.array(rows, dtype=RECORD_DTYPE))

    def close(self) -> None:
        """Write the trailer and fsync; after a failed write, only close the file (no trailer)
        and raise that failure again."""
        if self._file.closed:
            if self.failed is not None:
                raise self.failed
            return
        if self.failed is None:
            head = struct.pack("<QI", self.count, self.blocks)
            try:
                self._file.write(TRAILER.pack(self.count, self.blocks, zlib.crc32(head), END_MAGIC))
                self._file.flush()
                os.fsync(self._file.fileno())
            except OSError as error:
                self._fail(error)
        self._close_quietly()
        if self.failed is not None:
            raise self.failed

    def _close_quietly(self) -> None:
        """Close the file; its buffer may hold bytes a full disk will not take."""
        try:
            self._file.close()  # closes the descriptor even when the flush fails
        except OSError as error:
            self._fail(error)


@dataclass(frozen=True)
class LogInfo:
    """What a log's header and trailer say, checked against the file's size."""

    path: Path
    version: int
    records: int
    blocks: int  # 0 for version 1 (no blocks)
    size: int

    @property
    def body_end(self) -> int:
        return self.size - (TRAILER.size if self.version == 2 else TRAILER_V1.size)


def _open(path: Path) -> BufferedReader:
    """The log opened for reading; a FIFO, a device or a directory is refused, never read
    (a FIFO with no writer would block forever)."""
    try:
        handle = open_regular(path, "log")
    except UserError as exc:
        raise LogFormatError(str(exc)) from None
    assert isinstance(handle, BufferedReader)  # os.fdopen(fd, "rb")
    return handle


def inspect_log(path: Path) -> LogInfo:
    """Header and trailer of a log; raises UnfinishedLogError when there is no trailer."""
    with _open(path) as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(len(MAGIC))
        if head not in (MAGIC, MAGIC_V1):
            if len(head) < len(MAGIC) and MAGIC.startswith(head):
                raise UnfinishedLogError(
                    f"{path}, byte {len(head)}: the file ends inside its header: "
                    "the log was never closed (its experiment did not finish)"
                )
            raise LogFormatError(f"{path}, byte 0: not a bgbench log (bad magic {head!r})")
        version = 2 if head == MAGIC else 1
        trailer = TRAILER if version == 2 else TRAILER_V1
        tail = b""
        if size >= len(MAGIC) + trailer.size:
            f.seek(size - trailer.size)
            tail = f.read(trailer.size)
    if not tail.endswith(END_MAGIC):
        raise UnfinishedLogError(
            f"{path}, byte {size}: no trailer at the end of the file: the log was never "
            "closed (its experiment did not finish) or the file was cut short"
        )
    at = size - trailer.size
    body = at - len(MAGIC)
    if version == 1:
        count = TRAILER_V1.unpack(tail)[0]
        if count < 0 or body != count * RECORD_BYTES:
            raise LogFormatError(
                f"{path}, byte {at}: trailer says {count} records but the file holds "
                f"{body / RECORD_BYTES:g}"
            )
        return LogInfo(path, 1, count, 0, size)
    count, blocks, crc, _ = TRAILER.unpack(tail)
    if zlib.crc32(tail[:12]) != crc:
        raise LogFormatError(f"{path}, byte {at}: the trailer's checksum does not match")
    expected = count * RECORD_BYTES + blocks * BLOCK_HEADER.size
    if body != expected:
        raise LogFormatError(
            f"{path}, byte {at}: trailer says {count} records in {blocks} blocks "
            f"({expected} bytes) but the file holds {body} bytes of blocks"
        )
    return LogInfo(path, 2, count, blocks, size)


def iter_blocks(path: Path, info: LogInfo | None = None) -> Iterator[np.ndarray]:
    """The records of one log, a verified block at a time (at most BLOCK_RECORDS each), so a
    log of any size is read in bounded memory."""
    info = info or inspect_log(path)
    yield from (_iter_v1(info) if info.version == 1 else _iter_v2(info))


def _iter_v2(info: LogInfo, out: np.ndarray | None = None) -> Iterator[np.ndarray]:
    """Verified blocks; read straight into `out` (info.records long) when given."""
    path = info.path
    with _open(path) as f:
        f.seek(len(MAGIC))
        offset, seen, blocks = len(MAGIC), 0, 0
        sequence = RecordSequence(path)
        while offset < info.body_end:
            block = _read_block(f, path, offset, info.body_end, seen, sequence, out)
            yield block
            offset += BLOCK_HEADER.size + len(block) * RECORD_BYTES
            seen += len(block)
            blocks += 1
    if (seen, blocks) != (info.records, info.blocks):
        raise LogFormatError(
            f"{path}, byte {info.body_end}: trailer says {info.records} records in "
            f"{info.blocks} blocks, the blocks hold {seen} in {blocks}"
        )


def _read_block(
    f: BufferedReader,
    path: Path,
    offset: int,
    body_end: int,
    seen: int,
    sequence: RecordSequence,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The verified block at `offset`; read straight into out[seen:] when given."""
    header = f.read(BLOCK_HEADER.size)
    if len(header) < BLOCK_HEADER.size or offset + BLOCK_HEADER.size > body_end:
        raise LogFormatError(f"{path}, byte {offset}: a block header runs into the trailer")
    magic, n, crc = BLOCK_HEADER.unpack(header)
    if magic != BLOCK_MAGIC:
        raise LogFormatError(f"{path}, byte {offset}: expected a block header, found {magic!r}")
    start = offset + BLOCK_HEADER.size
    if start + n * RECORD_BYTES > body_end:
        raise LogFormatError(
            f"{path}, byte {offset}: a block of {n} records runs into the trailer "
            "(its header is corrupt)"
        )
    if out is None:
        block = np.empty(n, dtype=RECORD_DTYPE)
    else:
        block = out[seen : seen + n]
        if len(block) != n:
            raise LogFormatError(f"{path}, byte {offset}: more records than the trailer says")
    payload = block.view(np.uint8).data  # a memoryview
    if f.readinto(payload) != len(payload):
        raise LogFormatError(f"{path}, byte {start}: the file ends inside a block")
    if zlib.crc32(payload, zlib.crc32(header[4:8])) != crc:
        raise LogFormatError(
            f"{path}, byte {offset}: checksum mismatch in the block of records {seen}.."
            f"{seen + n - 1} (bytes {start}..{start + len(payload) - 1}): the file is corrupt"
        )
    sequence.check(block, start, seen)
    return block


def _iter_v1(info: LogInfo) -> Iterator[np.ndarray]:
    path = info.path
    if info.records == 0:
        return
    sequence = RecordSequence(path)
    with _open(path) as f:
        f.seek(len(MAGIC))
        for lo in range(0, info.records, BLOCK_RECORDS):
            block = np.empty(min(BLOCK_RECORDS, info.records - lo), dtype=RECORD_DTYPE)
            if f.readinto(block.view(np.uint8).data) != block.nbytes:
                raise LogFormatError(f"{path}, byte {len(MAGIC) + lo * RECORD_BYTES}: cut short")
            sequence.check(block, len(MAGIC) + lo * RECORD_BYTES, lo)
            yield block


def read_log(path: Path) -> np.ndarray:
    """All records of one log file, verified (checksums, trailer, possible records)."""
    return read_logs([path])


def open_log(path: Path) -> np.ndarray:
    """The records of one log file, verified; read into memory (blocks are not contiguous)."""
    return read_logs([path])


def read_logs(paths: list[Path]) -> np.ndarray:
    """The records of several logs in one array, allocated once from their trailers."""
    infos = [inspect_log(p) for p in paths]
    out = np.empty(sum(i.records for i in infos), dtype=RECORD_DTYPE)
    pos = 0
    for info in infos:
        part = out[pos : pos + info.records]
        if info.version == 2:
            for _ in _iter_v2(info, part):
                pass  # each block is read into `part` in place
        else:
            for lo, block in zip(
                range(0, info.records, BLOCK_RECORDS), _iter_v1(info), strict=True
            ):
                part[lo : lo + len(block)] = block
        pos += info.records
    return out
