"""bgbench.inputs: only regular files are read or written, never more than a bound."""

import os

import pytest

from bgbench.errors import UserError
from bgbench.inputs import check_output, check_regular, open_output, read_bounded, read_bounded_text


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "settings.toml"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="is a FIFO, not a regular file"):
        read_bounded(fifo, 1000, "settings file")
    with pytest.raises(UserError, match="is a FIFO"):
        open_output(fifo, "events file")
    with pytest.raises(UserError, match="is a FIFO"):
        check_output(fifo, "events file")


def test_devices_and_directories_are_refused(tmp_path):
    with pytest.raises(UserError, match="/dev/zero is a character device"):
        read_bounded("/dev/zero", 1000, "settings file")
    with pytest.raises(UserError, match="/dev/full is a character device"):
        check_output("/dev/full")
    with pytest.raises(UserError, match="is a directory"):
        check_regular(tmp_path, "log")


def test_a_missing_file_and_an_oversized_one_are_named(tmp_path):
    with pytest.raises(UserError, match=r"nope\.toml: No such file"):
        read_bounded(tmp_path / "nope.toml", 10, "settings file")
    big = tmp_path / "big.toml"
    big.write_bytes(b"x" * 11)
    with pytest.raises(UserError, match="larger than 10 bytes"):
        read_bounded(big, 10, "settings file")
    assert read_bounded(big, 11) == b"x" * 11
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"a\xff")
    with pytest.raises(UserError, match="not UTF-8 \\(byte 1\\)"):
        read_bounded_text(bad, 10)


def test_outputs_are_created_truncated_or_appended(tmp_path):
    target = tmp_path / "events.jsonl"
    target.write_text("old contents\n")
    with open_output(target) as out:
        out.write("new\n")
    assert target.read_text() == "new\n"
    with open_output(target, append=True) as out:
        out.write("more\n")
    assert target.read_text() == "new\nmore\n"
    with pytest.raises(UserError, match="does not exist"):
        check_output(tmp_path / "no" / "such.csv")
    assert check_output(tmp_path / "fresh.csv") == tmp_path / "fresh.csv"
