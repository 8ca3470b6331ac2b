"""Log integrity: every block is checksummed, impossible records are refused, and every error
names the file and the byte offset."""

import struct
import zlib

import numpy as np
import pytest

from bgbench.validation.logformat import (
    BLOCK_HEADER,
    NEVER,
    READ,
    RECORD_DTYPE,
    TRAILER,
    WRITE,
    LogFormatError,
    LogWriter,
    UnfinishedLogError,
    iter_blocks,
    read_log,
)

HEADER = 8  # the file's magic
VALUE_AT = RECORD_DTYPE.fields["value"][1]  # the value field's offset inside a record


def records(n: int) -> np.ndarray:
    out = np.zeros(n, dtype=RECORD_DTYPE)
    out["kind"] = READ
    out["item_id"] = np.arange(n)
    out["start"] = np.arange(n) * 10
    out["end"] = out["start"] + 5
    out["value"] = 3
    return out


def write(path, *batches: np.ndarray) -> None:
    w = LogWriter(path)
    for b in batches:
        w.append(b)
    w.close()


def record_offset(block: int, index: int, block_records: int) -> int:
    """Byte offset of record `index` of block `block`, every block holding block_records."""
    before = block * (BLOCK_HEADER.size + block_records * RECORD_DTYPE.itemsize)
    return HEADER + before + BLOCK_HEADER.size + index * RECORD_DTYPE.itemsize


def test_a_flipped_byte_in_a_value_is_corruption_not_a_stale_read(tmp_path):
    path = tmp_path / "log-f0.bglog"
    write(path, records(100), records(100))
    data = bytearray(path.read_bytes())
    data[record_offset(1, 42, 100) + VALUE_AT] ^= 0x04  # 3 -> 7 in the second block
    path.write_bytes(bytes(data))
    block_at = HEADER + BLOCK_HEADER.size + 100 * RECORD_DTYPE.itemsize
    with pytest.raises(LogFormatError, match=rf"log-f0.bglog, byte {block_at}: checksum mismatch"):
        read_log(path)
    with pytest.raises(LogFormatError, match="checksum mismatch"):
        list(iter_blocks(path))


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("end", 0, r"it ends before it starts \(end 0 < start 1000\)"),
        ("end", NEVER, "a read that never ended"),
        ("kind", 9, "unknown kind 9"),
    ],
)
def test_impossible_records_are_refused_with_their_offset(tmp_path, field, value, why):
    path = tmp_path / "log-f0.bglog"
    bad = records(50)
    bad[field][7] = value
    bad["start"][7] = 1000
    write(path, records(50), bad)  # checksums are right: the record itself is impossible
    at = record_offset(1, 7, 50)
    with pytest.raises(LogFormatError, match=rf"byte {at}: record 57 is impossible: {why}"):
        read_log(path)


def test_a_write_of_unknown_outcome_is_possible(tmp_path):
    path = tmp_path / "log-f0.bglog"
    ok = records(3)
    ok["kind"][1], ok["end"][1] = WRITE, NEVER
    write(path, ok)
    assert read_log(path)["end"][1] == NEVER


def test_a_truncated_log_names_where_it_ends(tmp_path):
    path = tmp_path / "log-f0.bglog"
    write(path, records(100))
    data = path.read_bytes()
    path.write_bytes(data[:1000])  # cut inside the block: the trailer is gone
    with pytest.raises(UnfinishedLogError, match=r"log-f0.bglog, byte 1000: no trailer"):
        read_log(path)


def rewrite_trailer(path, count: int, blocks: int) -> None:
    """A trailer with its own checksum right but counts that disagree with the blocks."""
    data = path.read_bytes()[: -TRAILER.size]
    head = struct.pack("<QI", count, blocks)
    path.write_bytes(data + TRAILER.pack(count, blocks, zlib.crc32(head), b"BGLOGEND"))


def test_a_trailer_count_mismatch_is_refused(tmp_path):
    path = tmp_path / "log-f0.bglog"
    write(path, records(10))
    rewrite_trailer(path, 11, 1)
    at = path.stat().st_size - TRAILER.size
    with pytest.raises(LogFormatError, match=rf"byte {at}: trailer says 11 records in 1 blocks"):
        read_log(path)


def test_a_corrupt_trailer_is_refused(tmp_path):
    path = tmp_path / "log-f0.bglog"
    write(path, records(10))
    data = bytearray(path.read_bytes())
    data[-TRAILER.size] ^= 1  # the count, without fixing the trailer's checksum
    path.write_bytes(bytes(data))
    with pytest.raises(LogFormatError, match="trailer's checksum does not match"):
        read_log(path)


def test_a_corrupt_block_header_is_refused(tmp_path):
    path = tmp_path / "log-f0.bglog"
    write(path, records(10), records(10))
    data = bytearray(path.read_bytes())
    data[HEADER] = ord("X")  # the first block's magic
    path.write_bytes(bytes(data))
    with pytest.raises(LogFormatError, match=rf"byte {HEADER}: expected a block header"):
        read_log(path)
    write(path, records(10), records(10))
    data = bytearray(path.read_bytes())
    data[HEADER + 4] = 11  # the first block's count: 10 -> 11
    path.write_bytes(bytes(data))
    with pytest.raises(LogFormatError, match=rf"byte {HEADER}: checksum mismatch"):
        read_log(path)


def test_a_directory_or_a_stranger_is_named(tmp_path):
    (tmp_path / "log-f0.bglog").mkdir()
    with pytest.raises(LogFormatError, match=r"log-f0.bglog is a directory"):
        read_log(tmp_path / "log-f0.bglog")
    other = tmp_path / "other.bglog"
    other.write_bytes(b"PK\x03\x04 this is a zip file, not a log")
    with pytest.raises(LogFormatError, match=r"other.bglog, byte 0: not a bgbench log"):
        read_log(other)
