import struct

import numpy as np
import pytest

from bgbench.validation.logformat import (
    BLOCK_HEADER,
    BLOCK_RECORDS,
    END_MAGIC,
    MAGIC,
    MAGIC_V1,
    RECORD_DTYPE,
    LogFormatError,
    LogWriter,
    UnfinishedLogError,
    inspect_log,
    iter_blocks,
    read_log,
)

ROW = (0, 1, 2, 3, 10, 100, 200, 5, 7)


def rows(n: int) -> list[tuple[int, ...]]:
    """n reads of one action of one thread (a genuine log holds no record twice)."""
    return [(*ROW[:4], ROW[4] + i, *ROW[5:]) for i in range(n)]


def test_what_is_written_is_read_back(tmp_path):
    path = tmp_path / "log.bglog"
    w = LogWriter(path)
    w.append_rows(rows(3))
    zeros = np.zeros(5, dtype=RECORD_DTYPE)
    zeros["start"] = zeros["end"] = np.arange(300, 305)
    w.append(zeros)
    w.append_rows([])
    w.close()
    records = read_log(path)
    assert w.count == len(records) == 8
    assert records[0]["item_id"] == 10 and records[0]["value"] == 5
    assert path.read_bytes().startswith(MAGIC)


@pytest.mark.slow
def test_big_appends_are_split_into_bounded_blocks(tmp_path):
    path = tmp_path / "log.bglog"
    records = np.zeros(2 * BLOCK_RECORDS + 10, dtype=RECORD_DTYPE)
    records["item_id"] = np.arange(len(records))
    w = LogWriter(path)
    w.append(records)
    w.close()
    info = inspect_log(path)
    assert (info.records, info.blocks) == (len(records), 3)
    sizes = [len(b) for b in iter_blocks(path)]
    assert sizes == [BLOCK_RECORDS, BLOCK_RECORDS, 10]
    assert np.array_equal(read_log(path)["item_id"], records["item_id"])


def test_an_unfinished_log_is_refused(tmp_path):
    path = tmp_path / "log.bglog"
    w = LogWriter(path)
    w.append_rows([ROW])
    w._file.flush()  # the process died before close(): no trailer
    with pytest.raises(UnfinishedLogError, match="never closed"):
        read_log(path)
    w.close()
    empty = tmp_path / "empty.bglog"
    empty.write_bytes(MAGIC[:3])  # died while writing the header
    with pytest.raises(UnfinishedLogError, match=r"empty.bglog, byte 3"):
        inspect_log(empty)


def test_a_count_that_disagrees_is_refused(tmp_path):
    path = tmp_path / "log.bglog"
    w = LogWriter(path)
    w.append_rows([ROW] * 2)
    w.append_rows([ROW])
    w.close()
    data = path.read_bytes()
    first_block = BLOCK_HEADER.size + 2 * RECORD_DTYPE.itemsize
    cut = data[:8] + data[8 + first_block :]  # drop a whole block, keep the trailer
    path.write_bytes(cut)
    with pytest.raises(LogFormatError, match="trailer says 3 records in 2 blocks"):
        read_log(path)


def write_v1(path, records: np.ndarray) -> None:
    path.write_bytes(MAGIC_V1 + records.tobytes() + struct.pack("<q", len(records)) + END_MAGIC)


def test_version_1_logs_are_still_read_and_checked(tmp_path):
    records = np.array(rows(4), dtype=RECORD_DTYPE)
    path = tmp_path / "old.bglog"
    write_v1(path, records)
    assert inspect_log(path).version == 1
    assert np.array_equal(read_log(path), records)
    records["end"][2] = 50  # ends before its start (100)
    write_v1(path, records)
    offset = 8 + 2 * RECORD_DTYPE.itemsize
    with pytest.raises(LogFormatError, match=rf"old.bglog, byte {offset}: record 2 is impossible"):
        read_log(path)
