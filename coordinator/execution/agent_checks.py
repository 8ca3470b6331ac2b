"""What an agent sends is untrusted input: every reply is checked before the coordinator
uses it. An agent is a process on another host that may be broken, of another version or
hostile; a count it reports sizes lists here (load processes become fragments), a
histogram it sends is inflated here, a payload is parsed here. So every count, size and
list is bounded, every float finite and non-negative, every histogram of bgbench's own
range and bounded before it is decoded, every fragment id one the agent was given, and
the validation counts consistent with each other.

A protocol version other than the coordinator's is the user's to fix (install the same
bgbench on both): UserError, exit 2, as the agent itself answers a mismatch. Anything else
out of bounds is a broken or hostile agent, an infrastructure fault: one line naming the
agent and the field, exit 3.
"""

import base64
import binascii
import json
import math
import struct
import zlib
from collections.abc import Sized
from functools import cache
from typing import Any

from hdrh.histogram import HdrHistogram

from bgbench.errors import SystemFault, UserError
from bgbench.protos import (
    HIST_DIGITS,
    HIST_HIGHEST_US,
    HIST_LOWEST_US,
    PROTOCOL_VERSION,
    new_histogram,
)
from bgbench.protos import worker_pb2 as pb
from bgbench.validation.phases import MAX_BINS

MAX_LOAD_PROCESSES = 256  # the agent's own --processes bound
MAX_CORES = 1 << 16
MAX_MEMORY_BYTES = 1 << 60
MAX_COUNT = 1 << 53  # actions, reads, members, ...: beyond it a float loses units
MAX_ROWS = 4096  # actions, error kinds, item kinds, store counters, phases, units
MAX_TEXT_CHARS = 4096  # ids, host names, versions, store descriptions, log paths
MAX_HIST_BYTES = 1 << 20  # one encoded histogram (bgbench's are a few KiB)
MAX_JSON_CHARS = 1 << 22  # a workload payload or the examples of a validation
MAX_SECONDS = 1e9  # about 30 years: any duration an agent reports is below it

_EXTERNAL_HEADER = struct.Struct(">II")  # cookie, compressed length
_PAYLOAD_HEADER = struct.Struct(">IIIIqqd")  # cookie, length, offset, digits, low, high, ratio


class AgentFault(SystemFault):
    """An agent sent something out of bounds or inconsistent."""

    def __init__(self, address: str, field: str, why: str) -> None:
        super().__init__(f"agent {address} sent an invalid {field}: {why}")


def check_handshake(address: str, reply: pb.HandshakeReply, measured: bool) -> None:
    if reply.protocol_version != PROTOCOL_VERSION:
        raise UserError(
            f"agent {address} speaks protocol version {reply.protocol_version}, this "
            f"coordinator {PROTOCOL_VERSION}: install the same bgbench on both"
        )
    if reply.error.message:
        return  # the caller raises it
    fewest = 0 if reply.monitor_only else 1  # a monitor-only agent runs no load
    _within(address, "load_processes", reply.load_processes, fewest, MAX_LOAD_PROCESSES)
    _within(address, "cores", reply.cores, 1, MAX_CORES)
    _within(address, "memory_bytes", reply.memory_bytes, 1, MAX_MEMORY_BYTES)
    for name in ("agent_id", "hostname", "bgbench_version", "python_version"):
        _text(address, name, getattr(reply, name))
    _seconds_like(address, "capacity", reply.capacity)
    if measured and reply.capacity <= 0:
        raise AgentFault(address, "capacity", f"{reply.capacity!r} when asked to measure it")


def check_status(address: str, reply: pb.StatusReply, processes: int) -> None:
    _rows(address, "Status processes", reply.processes, processes or MAX_LOAD_PROCESSES)
    for p in reply.processes:
        _seconds_like(address, "Status quiet_seconds", p.quiet_seconds)
        _seconds_like(address, "Status busy_seconds", p.busy_seconds)


def check_prepare(address: str, request: pb.PrepareRequest, reply: pb.PrepareReply) -> None:
    if reply.error.message:
        return
    _text(address, "store_description", reply.store_description)
    given = set(request.fragments)
    if request.phase == pb.PREPARE_READY:
        expected = MAX_LOAD_PROCESSES
    else:
        expected = len(given) if request.phase != pb.PREPARE_SCHEMA else 0
    _rows(address, "prepare fragments", reply.fragments, expected)
    if request.phase == pb.PREPARE_LOAD and len(reply.fragments) != len(given):
        raise AgentFault(
            address, "prepare fragments", f"{len(reply.fragments)} for {len(given)} asked"
        )
    for f in reply.fragments:
        if request.phase != pb.PREPARE_READY and f.fragment not in given:
            raise AgentFault(address, "fragment id", f"{f.fragment} is not one of {sorted(given)}")
        _within(address, "fragment members", f.members, 0, MAX_COUNT)
        _seconds_like(address, "load_seconds", f.load_seconds)
        _rows(address, "phase_seconds", f.phase_seconds, MAX_ROWS)
        for name, seconds in f.phase_seconds.items():
            _text(address, "phase name", name)
            _seconds_like(address, f"phase_seconds[{name!r}]", seconds)


def check_progress(address: str, progress: pb.Progress) -> None:
    for name in ("elapsed_seconds", "cpu_percent", "client_lag_ms"):
        _seconds_like(address, f"progress {name}", getattr(progress, name))
    for name in ("actions", "errors", "sessions"):
        _within(address, f"progress {name}", getattr(progress, name), 0, MAX_COUNT)
    _within(address, "progress timeouts", progress.timeouts, 0, progress.errors)
    _histogram(address, "progress response_hist_delta", progress.response_hist_delta)


def check_result(address: str, result: pb.RunResult, processes: int) -> None:
    if result.load_processes != processes:
        raise AgentFault(
            address,
            "run load_processes",
            f"{result.load_processes}, where its handshake said {processes}",
        )
    for name in ("elapsed_seconds", "cpu_seconds", "loop_lag_max_ms"):
        _seconds_like(address, f"run {name}", getattr(result, name))
    for name in ("actions", "sessions", "errors", "log_records", "threads"):
        _within(address, f"run {name}", getattr(result, name), 0, MAX_COUNT)
    _within(address, "run timeouts", result.timeouts, 0, result.errors)
    for name in ("log_dir", "aborted", "note", "concurrency", "start_state"):
        _text(address, f"run {name}", getattr(result, name))
    _rows(address, "run per_action", result.per_action, MAX_ROWS)
    for a in result.per_action:
        _text(address, "action name", a.action)
        _within(address, f"run count of {a.action!r}", a.count, 0, MAX_COUNT)
        _within(address, f"run errors of {a.action!r}", a.errors, 0, a.count)
        _histogram(address, f"response_hist of {a.action!r}", a.response_hist)
        _histogram(address, f"service_hist of {a.action!r}", a.service_hist)
        _rows(address, f"run counts of {a.action!r}", a.counts, MAX_ROWS)
        for name, n in a.counts.items():
            _text(address, f"run counts of {a.action!r}", name)
            _within(address, f"run counts[{name!r}] of {a.action!r}", n, 0, MAX_COUNT)
    _rows(address, "run error_counts", result.error_counts, MAX_ROWS)
    for e in result.error_counts:
        for text in (e.action, e.type, e.sample):
            _text(address, "run error_counts", text)
    for name in ("store_counters", "per_unit"):
        rows = getattr(result, name)
        _rows(address, f"run {name}", rows, MAX_ROWS)
        for key in rows:
            _text(address, f"run {name}", key)
    _histogram(address, "run session_hist", result.session_hist)
    _histogram(address, "run client_delay_hist", result.client_delay_hist)
    _json(address, "run workload_payload", result.workload_payload)


def check_validation(address: str, reply: pb.ValidateReply, phases: int = 0) -> None:
    """`phases`: how many phases were asked for (0: none, nor a series)."""
    if reply.error.message:
        return
    _check_phases(address, reply, phases)
    for name in ("reads", "writes", "sessions", "log_records"):
        _within(address, f"validation {name}", getattr(reply, name), 0, MAX_COUNT)
    _within(address, "validation unpredictable_reads", reply.unpredictable_reads, 0, reply.reads)
    _within(address, "validation never_valid", reply.never_valid, 0, reply.unpredictable_reads)
    _within(
        address,
        "validation unpredictable_sessions",
        reply.unpredictable_sessions,
        0,
        reply.sessions,
    )
    _seconds_like(address, "validation seconds", reply.seconds)
    _histogram(address, "validation lag_hist", reply.lag_hist)
    for name in ("by_item", "by_action"):
        rows = getattr(reply, name)
        _rows(address, f"validation {name}", rows, MAX_ROWS)
        for row in rows:
            _text(address, f"validation {name}", row.name)
            _within(address, f"validation {name} reads", row.reads, 0, MAX_COUNT)
            _within(address, f"validation {name} unpredictable", row.unpredictable, 0, row.reads)
    _check_visibility(address, reply)
    examples = _json(address, "validation examples_json", reply.examples_json)
    if not (isinstance(examples, list) and all(isinstance(e, dict) for e in examples)):
        raise AgentFault(address, "validation examples_json", "not a JSON array of objects")
    _json(address, "validation workload_payload", reply.workload_payload)


def _check_visibility(address: str, reply: pb.ValidateReply) -> None:
    _rows(address, "validation visibility", reply.visibility, MAX_ROWS)
    for v in reply.visibility:
        _text(address, "validation visibility action", v.action)
        _text(address, "validation visibility item", v.item)
        _within(address, "validation visibility writes", v.writes, 0, reply.writes)
        _within(address, "validation visibility unread", v.unread, 0, v.writes)
        _within(address, "validation visibility never", v.never, 0, v.writes - v.unread)
        _histogram(address, "validation visibility hist", v.hist)


def _check_phases(address: str, reply: pb.ValidateReply, phases: int) -> None:
    """Per phase and per bin: as many phases as asked, adding up to the totals; bins
    within the cap, each within its reads."""
    if len(reply.phases) != phases:
        raise AgentFault(address, "validation phases", f"{len(reply.phases)} for {phases} asked")
    for name, counts in (("reads", reply.reads), ("unpredictable", reply.unpredictable_reads)):
        total = sum(getattr(p, name) for p in reply.phases)
        if phases and total != counts:
            raise AgentFault(
                address, f"validation phases {name}", f"{total} in all, where the run has {counts}"
            )
    for p in reply.phases:
        _within(address, "validation phase unpredictable", p.unpredictable, 0, p.reads)
        _histogram(address, "validation phase lag_hist", p.lag_hist)
    _rows(address, "validation series_reads", reply.series_reads, MAX_BINS)
    if len(reply.series_unpredictable) != len(reply.series_reads):
        raise AgentFault(
            address,
            "validation series_unpredictable",
            f"{len(reply.series_unpredictable)} bins for {len(reply.series_reads)} of reads",
        )
    for reads, bad in zip(reply.series_reads, reply.series_unpredictable, strict=True):
        _within(address, "validation series_unpredictable", bad, 0, reads)
    _within(address, "validation series_reads", sum(reply.series_reads), 0, reply.reads)


# -- the bounds --------------------------------------------------------------------------


def _within(address: str, field: str, value: int, lowest: int, highest: int) -> None:
    if not lowest <= value <= highest:
        raise AgentFault(address, field, f"{value}, not {lowest} to {highest}")


def _seconds_like(address: str, field: str, value: float) -> None:
    """A duration, rate or share: finite and non-negative."""
    if not (math.isfinite(value) and 0 <= value <= MAX_SECONDS):
        raise AgentFault(address, field, f"{value!r}, not a finite number >= 0")


def _text(address: str, field: str, value: str) -> None:
    if len(value) > MAX_TEXT_CHARS:
        raise AgentFault(address, field, f"{len(value)} characters, more than {MAX_TEXT_CHARS}")


def _rows(address: str, field: str, rows: Sized, most: int) -> None:
    count = len(rows)
    if count > most:
        raise AgentFault(address, field, f"{count} entries, more than {most}")


def _json(address: str, field: str, text: str) -> Any:
    """The parsed JSON of `text` ([] if empty), bounded in size; nesting too deep for the
    parser is refused rather than raised as a RecursionError."""
    if not text:
        return []
    if len(text) > MAX_JSON_CHARS:
        raise AgentFault(address, field, f"{len(text)} characters, more than {MAX_JSON_CHARS}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise AgentFault(address, field, "not JSON (or nested too deep)") from None


@cache
def _inflated_bound() -> int:
    """The most bytes one of bgbench's histograms inflates to: its header, then at most
    nine bytes (a LEB128 varint) per counter."""
    return _PAYLOAD_HEADER.size + 9 * int(new_histogram().counts_len)


def _histogram(address: str, field: str, data: bytes) -> None:
    problem = histogram_problem(data)
    if problem:
        raise AgentFault(address, field, problem)


def histogram_problem(data: bytes) -> str | None:
    """Why `data` is not one of bgbench's encoded histograms (None if it is, or is empty).
    Checked before hdrh decodes it: hdrh would inflate without a bound and allocate the
    counters for whatever range the header claims."""
    if not data:
        return None
    if len(data) > MAX_HIST_BYTES:
        return f"a histogram of {len(data)} bytes, more than {MAX_HIST_BYTES}"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "a histogram that is not base64"
    if len(raw) < _EXTERNAL_HEADER.size:
        return "a truncated histogram"
    _, length = _EXTERNAL_HEADER.unpack_from(raw)
    inflate = zlib.decompressobj()
    try:
        plain = inflate.decompress(raw[_EXTERNAL_HEADER.size :][:length], _inflated_bound())
    except zlib.error:
        return "a histogram that does not inflate"
    if inflate.unconsumed_tail:
        return f"a histogram that inflates beyond {_inflated_bound()} bytes"
    if len(plain) < _PAYLOAD_HEADER.size:
        return "a truncated histogram"
    _, _, _, digits, lowest, highest, _ = _PAYLOAD_HEADER.unpack_from(plain)
    if (lowest, highest, digits) != (HIST_LOWEST_US, HIST_HIGHEST_US, HIST_DIGITS):
        return f"a histogram of {lowest}..{highest} us, {digits} digits: not bgbench's"
    try:
        HdrHistogram.decode(data)
    except Exception:  # hdrh raises its own kinds, ValueError, TypeError, zlib.error
        return "a histogram that does not decode"
    return None
