"""`bgbench validate` on forged logs and hostile files (issue 24, items 7, 9, 10, 12): each
forgery is refused with one line naming the file and the byte offset (or line), exit 2,
never counted as stale reads; the same log undamaged validates with none."""

import json
import os
import shutil
import struct
import subprocess
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from bgbench.errors import SystemFault
from bgbench.validation.logformat import (
    BLOCK_HEADER,
    BLOCK_RECORDS,
    MAGIC,
    RECORD_BYTES,
    RECORD_DTYPE,
    TRAILER,
    WRITE,
    LogWriteError,
    LogWriter,
    UnfinishedLogError,
    inspect_log,
    read_log,
)
from tests.e2e.test_validate import write_bg_logs
from tests.helpers import BGBENCH, bgbench

FIRST_RECORD = len(MAGIC) + BLOCK_HEADER.size  # byte offset of record 0 of a one-block log


def refused(proc: subprocess.CompletedProcess, *names: str, status: int = 2) -> str:
    """The command failed as it should: `status`, one line naming `names`, no count."""
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    for name in names:
        assert name in proc.stderr, (name, proc.stderr)
    assert "unpredictable" not in proc.stderr and "stale" not in proc.stderr
    return proc.stderr


def rewrite(log: Path, records: np.ndarray) -> None:
    """The log written again with valid checksums and trailer: a forgery, not corruption."""
    assert len(records) < BLOCK_RECORDS  # one block: record i is at FIRST_RECORD + i * size
    w = LogWriter(log)
    w.append(records)
    w.close()


def at(index: int) -> str:
    return f"byte {FIRST_RECORD + index * RECORD_BYTES}:"


def validated(directory: Path, *extra: str) -> dict:
    proc = bgbench("validate", str(directory), "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_undamaged_log_validates_with_no_stale_reads(experiment):
    d = validated(experiment)
    assert d["reads"] > 100 and d["writes"] > 0
    assert d["unpredictable_reads"] == 0


def test_a_duplicated_block_with_a_valid_checksum_is_refused(experiment):
    log = experiment / "log-f0.bglog"
    data = log.read_bytes()
    n = BLOCK_HEADER.unpack_from(data, len(MAGIC))[1]
    block = data[len(MAGIC) : FIRST_RECORD + n * RECORD_BYTES]  # checksum and all
    count, blocks, _, end = TRAILER.unpack(data[-TRAILER.size :])
    head = struct.pack("<QI", count + n, blocks + 1)
    forged = (
        data[: len(MAGIC) + len(block)]
        + block
        + data[len(MAGIC) + len(block) : -TRAILER.size]
        + TRAILER.pack(count + n, blocks + 1, zlib.crc32(head), end)
    )
    log.write_bytes(forged)
    copy_at = len(MAGIC) + len(block) + BLOCK_HEADER.size
    err = refused(bgbench("validate", str(experiment)), str(log), "byte ")
    offset = int(err.split("byte ")[1].split(":")[0])
    assert copy_at <= offset < copy_at + n * RECORD_BYTES, err  # a record of the copy
    assert "duplicate" in err or "out of order" in err


def test_a_duplicated_write_record_is_refused(experiment):
    log = experiment / "log-f0.bglog"
    records = read_log(log)
    w = int(np.flatnonzero(records["kind"] == WRITE)[0])
    rewrite(log, np.insert(records, w + 1, records[w]))
    refused(bgbench("validate", str(experiment)), str(log), at(w + 1), "duplicate")


def test_a_write_record_moved_back_in_time_is_refused(experiment):
    log = experiment / "log-f0.bglog"
    records = read_log(log)
    w = int(np.flatnonzero(records["kind"] == WRITE)[0])
    moved = np.concatenate([np.delete(records, w), records[w : w + 1]])  # logged again last
    rewrite(log, moved)
    refused(bgbench("validate", str(experiment)), str(log), at(len(records) - 1), "out of order")


def test_deltas_that_would_overflow_int64_are_refused(experiment):
    log = experiment / "log-f0.bglog"
    records = read_log(log)
    writes = np.flatnonzero(records["kind"] == WRITE)
    huge = records.copy()
    huge["value"][writes[0]] = 1 << 62  # one forged delta: no count is that large
    rewrite(log, huge)
    refused(bgbench("validate", str(experiment)), str(log), at(int(writes[0])), "2^53")
    assert len(writes) >= 300, len(writes)
    summed = records.copy()
    summed["value"][writes] = np.where(np.arange(len(writes)) % 2, 1 << 53, -(1 << 53))
    rewrite(log, summed)  # each delta plausible, their sum beyond what int64 sums hold
    err = refused(bgbench("validate", str(experiment)), str(log), "2^61")
    assert at(int(writes[256])) in err, err  # the 257th pushes the total past 2^61


def test_a_read_of_minus_2_to_the_62_is_refused(experiment):
    log = experiment / "log-f0.bglog"
    records = read_log(log)
    r = int(np.flatnonzero(records["kind"] == 0)[3])
    records["value"][r] = -(1 << 62)
    rewrite(log, records)
    refused(bgbench("validate", str(experiment)), str(log), at(r), "2^53")


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, array in arrays.items():
            with z.open(f"{name}.npy", "w") as f:
                np.lib.format.write_array(f, array, allow_pickle=False)


def test_duplicate_and_unsorted_initial_ids_are_refused(experiment):
    initial = experiment / "initial-f0.npz"
    with np.load(initial) as z:
        arrays = {name: z[name] for name in z.files}
    ids, values = arrays["ids_0"].copy(), arrays["values_0"].copy()
    ids[[3, 4]] = ids[[4, 3]]  # unsorted
    save_npz(initial, {**arrays, "ids_0": ids, "values_0": values})
    refused(bgbench("validate", str(experiment)), str(initial), "ids_0[4]", "out of order")
    ids = arrays["ids_0"].copy()
    ids[5] = ids[4]  # repeated
    save_npz(initial, {**arrays, "ids_0": ids})
    refused(bgbench("validate", str(experiment)), str(initial), "ids_0[5]", "repeated")


def test_a_zip_bombed_initial_file_is_refused_unread(experiment):
    initial = experiment / "initial-f0.npz"
    chunk = bytes(64 << 20)
    header = {"descr": "<i8", "fortran_order": False, "shape": (2**28,)}
    with (
        zipfile.ZipFile(initial, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z,
        z.open("ids_0.npy", "w", force_zip64=True) as f,
    ):
        np.lib.format.write_array_header_2_0(f, header)
        for _ in range(32):  # 2 GiB of zeros, a few MiB on disk
            f.write(chunk)
    assert initial.stat().st_size < 16 << 20
    err = refused(
        bgbench("validate", str(experiment), "--memory-budget", "256MiB"), str(initial), "unread"
    )
    assert "2,147,483,7" in err  # the size its directory declares


def test_a_fifo_log_is_refused_not_waited_on(experiment, tmp_path):
    log = experiment / "log-f1.bglog"
    os.mkfifo(log)
    refused(bgbench("validate", str(experiment), timeout=120), str(log), "FIFO")
    log.unlink()
    shutil.copy(experiment / "log-f0.bglog", experiment / "log-f2.bglog")
    os.mkfifo(experiment / "initial-f2.npz")
    refused(bgbench("validate", str(experiment), timeout=120), "initial-f2.npz", "FIFO")
    bg = tmp_path / "bg"
    write_bg_logs(bg)
    os.mkfifo(bg / "read1-7.txt")
    refused(bgbench("validate", str(bg), "--initial-default", "0", timeout=120), "read1-7.txt")
    fifo_csv = tmp_path / "initial.csv"
    os.mkfifo(fifo_csv)
    shutil.rmtree(bg)
    write_bg_logs(bg)
    refused(bgbench("validate", str(bg), "--initial", str(fifo_csv), timeout=120), "FIFO")


def test_bg_logs_refuse_python_only_integers(tmp_path):
    logs = tmp_path / "bg"
    write_bg_logs(logs)
    with open(logs / "read1-0.txt", "a") as f:
        f.write("READ,NumFriends,4,0,7,0,10,1_00,ViewProfile\n")
    refused(
        bgbench("validate", str(logs), "--initial-default", "0"),
        f"{logs / 'read1-0.txt'}:4",
        "'1_00' is not a decimal integer",
    )


def test_a_repeated_bg_line_or_initial_rid_is_named(tmp_path):
    logs = tmp_path / "bg"
    write_bg_logs(logs)
    initial = tmp_path / "initial.csv"
    initial.write_text("type,rid,value\nNumFriends,7,0\nPendingCount,7,5\nNumFriends,7,9\n")
    refused(bgbench("validate", str(logs), "--initial", str(initial)), f"{initial}:4", "line 2")
    with open(logs / "update1-1.txt", "a") as f:
        f.write("UPDATE,NumFriends,11,1,7,2,4,1,I,AcceptFriend\n")  # line 2 again
    initial.write_text("type,rid,value\nNumFriends,7,0\nPendingCount,7,5\n")
    refused(
        bgbench("validate", str(logs), "--initial", str(initial)),
        f"{logs / 'update1-1.txt'}:4",
        f"repeats the record of {logs / 'update1-1.txt'}:2",
    )


def test_workers_beyond_the_cores_are_capped_and_said(experiment):
    proc = bgbench("validate", str(experiment), "--workers", "100000", "--json")
    assert proc.returncode == 0, proc.stderr
    cores = len(os.sched_getaffinity(0))
    assert f"--workers 100000 capped at {cores} (cores)" in proc.stderr
    d = json.loads(proc.stdout)
    assert d["workers"] <= cores and d["workers_note"] in proc.stderr
    proc = bgbench("validate", str(experiment), "--workers", "8", "--memory-budget", "64KiB")
    assert proc.returncode == 0, proc.stderr
    assert "--workers 8 capped at 1 (memory budget)" in proc.stderr


def test_a_per_read_device_is_refused_before_validating(experiment):
    err = refused(bgbench("validate", str(experiment), "--per-read", "/dev/full"), "/dev/full")
    assert "character device" in err


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs (CI runs as root), unmounted whatever happens."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_a_named_write_error_not_corruption(tiny_disk):
    log = tiny_disk / "log-f0.bglog"
    w = LogWriter(log)
    records = np.zeros(1000, dtype=RECORD_DTYPE)
    records["start"] = records["end"] = np.arange(1000)
    records["item_id"] = np.arange(1000)
    with pytest.raises(LogWriteError, match=rf"{log}: cannot write it: disk full") as err:
        for _ in range(10):  # 430 KB into 64 KiB
            w.append(records)
    assert isinstance(err.value, SystemFault)
    with pytest.raises(LogWriteError, match="disk full"):
        w.close()  # no trailer written over what the disk did not take
    with pytest.raises(UnfinishedLogError, match="never closed"):
        inspect_log(log)


def test_a_per_read_file_on_a_full_disk_is_one_line_exit_3(tiny_disk, experiment):
    with open(tiny_disk / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
        while True:
            f.write(bytes(4096))
    target = tiny_disk / "bad.csv"
    proc = bgbench("validate", str(experiment), "--per-read", str(target))
    refused(proc, str(target), "No space left on device", status=3)


@pytest.fixture
def agent_on_a_small_disk(tmp_path):
    """A real agent whose work dir (logs, initial values) is a 1 MiB tmpfs."""
    disk = tmp_path / "small"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], check=True)
    agent = subprocess.Popen(
        [*BGBENCH, "agent", "--listen", "127.0.0.1:0", "--work-dir", str(disk), "--processes", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert agent.stdout is not None
        line = agent.stdout.readline()  # the agent's first line, once it listens
        assert line.startswith("BGBENCH-AGENT LISTENING "), line
        yield line.split()[-1], disk
    finally:
        agent.kill()
        agent.wait(timeout=60)
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_run_whose_agent_disk_fills_is_an_infrastructure_failure_naming_it(
    agent_on_a_small_disk, tmp_path
):
    address, disk = agent_on_a_small_disk
    proc = bgbench(
        "run", "--store", "null", "--threads", "16", "--duration", "5", "--mix", "high",
        "--users", "2000", "--results", str(tmp_path / "res"),
        "-p", f'agents.addresses=["{address}"]', "-p", "agents.heartbeat_timeout=120",
    )  # fmt: skip
    assert proc.returncode == 3, (proc.returncode, proc.stdout[-2000:], proc.stderr)
    failure = " ".join(proc.stdout.split())  # rich wraps the line
    assert "INFRASTRUCTURE FAILURE" in failure
    assert (
        f"{disk}/experiments/" in failure and "log-f0.bglog: cannot write it: disk full" in failure
    )
    assert "trailer says" not in proc.stdout + proc.stderr
