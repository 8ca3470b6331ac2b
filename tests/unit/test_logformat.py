import numpy as np
import pytest

from bgbench.validation.logformat import RECORD_DTYPE, LogFormatError, LogWriter, read_log


def test_what_is_written_is_read_back(tmp_path):
    path = tmp_path / "log.bglog"
    w = LogWriter(path)
    w.append_rows([(0, 1, 2, 3, 10, 100, 200, 5, 7)] * 3)
    w.append(np.zeros(5, dtype=RECORD_DTYPE))
    w.append_rows([])
    w.close()
    records = read_log(path)
    assert w.count == len(records) == 8
    assert records[0]["item_id"] == 10 and records[0]["value"] == 5


def test_an_unfinished_log_is_refused(tmp_path):
    path = tmp_path / "log.bglog"
    w = LogWriter(path)
    w.append_rows([(0, 1, 2, 3, 10, 100, 200, 5, 7)])
    w._file.flush()  # the process died before close(): no trailer
    with pytest.raises(LogFormatError, match="truncated"):
        read_log(path)
    w.close()


def test_a_count_that_disagrees_is_refused(tmp_path):
    path = tmp_path / "log.bglog"
    w = LogWriter(path)
    w.append_rows([(0, 1, 2, 3, 10, 100, 200, 5, 7)] * 2)
    w.close()
    data = bytearray(path.read_bytes())
    cut = data[: 8 + RECORD_DTYPE.itemsize] + data[-16:]  # drop one record, keep the trailer
    path.write_bytes(bytes(cut))
    with pytest.raises(LogFormatError, match="trailer says 2"):
        read_log(path)
