"""Binary read/write logs: one file per fragment per experiment.

Layout: an 8-byte magic, then fixed-size little-endian records (RECORD_DTYPE), then
a trailer of the record count and an end magic. A file without its trailer was not
closed (the experiment did not finish) and is refused; a count that disagrees with
the records present is refused too, so nothing is silently dropped.

A write whose outcome is unknown (the store raised) is logged with end = NEVER:
it may take effect at any time after its start, or not at all.
"""

import os
from pathlib import Path

import numpy as np

MAGIC = b"BGLOG\x00v1"
END_MAGIC = b"BGLOGEND"
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


class LogFormatError(Exception):
    pass


class LogWriter:
    """Appends record batches; close() writes the trailer and fsyncs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._file.write(MAGIC)
        self.count = 0

    def append(self, records: np.ndarray) -> None:
        if records.dtype != RECORD_DTYPE:
            records = records.astype(RECORD_DTYPE)
        self._file.write(records.tobytes())
        self.count += len(records)

    def append_rows(self, rows: list[tuple]) -> None:
        if rows:
            self.append(np.array(rows, dtype=RECORD_DTYPE))

    def close(self) -> None:
        self._file.write(np.int64(self.count).tobytes())
        self._file.write(END_MAGIC)
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()


def read_log(path: Path) -> np.ndarray:
    """All records of one log file, checked against its trailer."""
    return np.array(open_log(path))


def open_log(path: Path) -> np.ndarray:
    """The records of one log file, memory-mapped (nothing read yet), checked against its
    trailer."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise LogFormatError(f"{path}: not a bgbench log (bad magic)")
        if size < len(MAGIC) + 16:
            raise LogFormatError(f"{path}: truncated, no trailer (the experiment did not finish)")
        f.seek(size - 16)
        count = int(np.frombuffer(f.read(8), "<i8")[0])
        if f.read(8) != END_MAGIC:
            raise LogFormatError(f"{path}: truncated, no trailer (the experiment did not finish)")
    body = size - len(MAGIC) - 16
    if body != count * RECORD_DTYPE.itemsize:
        raise LogFormatError(
            f"{path}: trailer says {count} records but the file holds "
            f"{body / RECORD_DTYPE.itemsize:g}"
        )
    if count == 0:
        return np.empty(0, dtype=RECORD_DTYPE)
    return np.memmap(path, dtype=RECORD_DTYPE, mode="r", offset=len(MAGIC), shape=(count,))
