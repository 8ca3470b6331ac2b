"""`bgbench validate` on damaged or wrong inputs: exit 2, one line naming the file, no traceback."""

import json
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np

from bgbench.coordinator.execution.offline import validate_directory
from bgbench.validation.logformat import RECORD_DTYPE, TRAILER, LogWriter, read_log
from tests.e2e.test_validate import write_bg_logs
from tests.helpers import bgbench


def refused(proc: subprocess.CompletedProcess, *names: str) -> str:
    """The command failed as bad input should: exit 2, one line naming `names`."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    for name in names:
        assert name in proc.stderr, (name, proc.stderr)
    return proc.stderr


def test_the_real_logs_validate(experiment):
    assert bgbench("validate", str(experiment), "--json").returncode == 0


def test_a_flipped_byte_is_corruption_not_a_stale_read(experiment):
    log = experiment / "log-f0.bglog"
    records = read_log(log)
    first_read = int(np.flatnonzero(records["kind"] == 0)[0])
    value_at = 8 + 12 + first_read * RECORD_DTYPE.itemsize + RECORD_DTYPE.fields["value"][1]
    data = bytearray(log.read_bytes())
    data[value_at] ^= 0x01
    log.write_bytes(bytes(data))
    err = refused(bgbench("validate", str(experiment)), str(log), "byte 8", "checksum mismatch")
    assert "unpredictable" not in err


def rewrite(log: Path, records: np.ndarray) -> None:
    w = LogWriter(log)
    w.append(records)
    w.close()


def test_a_record_that_ends_before_it_starts_is_refused(experiment):
    log = experiment / "log-f0.bglog"
    records = read_log(log)
    records["end"][5] = records["start"][5] - 1
    rewrite(log, records)  # checksums right, the record impossible
    at = 8 + 12 + 5 * RECORD_DTYPE.itemsize
    refused(bgbench("validate", str(experiment)), str(log), f"byte {at}", "ends before it starts")


def test_a_truncated_log_is_named(experiment):
    log = experiment / "log-f0.bglog"
    log.write_bytes(log.read_bytes()[:5000])
    refused(
        bgbench("validate", str(experiment)),
        str(log),
        "never closed",
        "byte 5000",
        "--allow-unfinished",
    )


def test_a_trailer_count_mismatch_is_refused(experiment):
    log = experiment / "log-f0.bglog"
    data = log.read_bytes()
    count, blocks, _, end = TRAILER.unpack(data[-TRAILER.size :])
    head = struct.pack("<QI", count + 1, blocks)
    log.write_bytes(data[: -TRAILER.size] + TRAILER.pack(count + 1, blocks, zlib.crc32(head), end))
    refused(bgbench("validate", str(experiment)), str(log), f"trailer says {count + 1} records")


def test_a_truncated_initial_file_is_named(experiment):
    initial = experiment / "initial-f0.npz"
    initial.write_bytes(initial.read_bytes()[:300])
    refused(bgbench("validate", str(experiment)), str(initial))


def test_a_log_that_is_a_directory_is_named(experiment):
    (experiment / "log-f9.bglog").mkdir()
    refused(bgbench("validate", str(experiment)), str(experiment / "log-f9.bglog"), "directory")


def test_an_empty_or_missing_directory_is_one_line(tmp_path):
    refused(bgbench("validate", str(tmp_path)), "no logs in", str(tmp_path))
    refused(bgbench("validate", str(tmp_path / "nowhere")), str(tmp_path / "nowhere"))


def test_a_per_read_file_in_a_missing_directory_is_named(experiment, tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "bad.csv"
    refused(bgbench("validate", str(experiment), "--per-read", str(target)), str(target))


def test_a_bg_value_above_int64_is_a_named_malformed_line(tmp_path):
    logs = tmp_path / "bg"
    write_bg_logs(logs)
    with open(logs / "read1-0.txt", "a") as f:
        f.write(f"READ,NumFriends,4,0,7,0,10,{1 << 63},ViewProfile\n")
    refused(
        bgbench("validate", str(logs), "--initial-default", "0"),
        f"{logs / 'read1-0.txt'}:4",
        "observedValue",
    )


def test_a_bg_log_that_is_not_utf8_is_named(tmp_path):
    logs = tmp_path / "bg"
    write_bg_logs(logs)
    with open(logs / "update1-1.txt", "ab") as f:
        f.write(b"UPDATE,NumFriends\xff,13,1,7,5,6,2,I,AcceptFriend\n")
    refused(
        bgbench("validate", str(logs), "--initial-default", "0"),
        f"{logs / 'update1-1.txt'}:4",
        "not UTF-8",
    )


def test_an_initial_csv_that_is_not_utf8_or_missing_is_named(tmp_path):
    logs = tmp_path / "bg"
    write_bg_logs(logs)
    initial = tmp_path / "initial.csv"
    initial.write_bytes(b"type,rid,value\nNumFriends,7,0\nPending\xe9Count,7,5\n")
    refused(bgbench("validate", str(logs), "--initial", str(initial)), f"{initial}:3", "UTF-8")
    missing = tmp_path / "missing.csv"
    refused(bgbench("validate", str(logs), "--initial", str(missing)), str(missing))


def test_unfinished_logs_are_skipped_and_listed_only_when_allowed(real_run, tmp_path):
    # a killed coordinator's last experiment: its log has no trailer
    root = tmp_path / "rating"
    finished, killed = root / "agent-0" / "exp-1", root / "agent-0" / "exp-2"
    shutil.copytree(real_run, finished)
    shutil.copytree(real_run, killed)
    log = killed / "log-f0.bglog"
    log.write_bytes(log.read_bytes()[: -TRAILER.size])
    refused(bgbench("validate", str(root)), str(log), "1 of 2 logs were never closed")
    proc = bgbench("validate", str(root), "--allow-unfinished", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    alone = validate_directory(finished, 1 << 30, 1).to_dict()
    assert (report["logs"], report["unfinished_skipped"]) == (1, 1)
    assert report["unfinished"][0]["log"] == str(log.relative_to(root))
    assert "never closed" in report["unfinished"][0]["reason"]
    assert report["reads"] == alone["reads"] > 0
