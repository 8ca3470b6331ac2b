"""Reading the original BG (Java) validation logs, so logs BG itself produced can be checked.

Files, one pair per client machine and thread:
  read<machine>-<thread>.txt
      READ,<type>,seqID,threadid,rid,startNs,endNs,observedValue,actionName
  update<machine>-<thread>.txt
      UPDATE,<type>,seqID,threadid,rid,startNs,endNs,value,<I|D>,actionName
An update is a delta write: I is +1 and D is -1 (its value field is not used). Item
kinds are BG's type names, numbered in order of appearance; the session of a record
is its (machine, thread, seqID). Every malformed line is reported with its file and
line number; none is silently dropped.
"""

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bgbench.errors import UserError
from bgbench.inputs import open_regular
from bgbench.validation.initial import InitialValues
from bgbench.validation.records import READ, RECORD_DTYPE, TIME_LIMIT, VALUE_LIMIT, WRITE

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
DECIMAL = re.compile(r"-?[0-9]{1,19}")
READ_FILE = re.compile(r"^read(.*)-(\d+)\.txt$")
UPDATE_FILE = re.compile(r"^update(.*)-(\d+)\.txt$")


@dataclass
class BGLogs:
    records: np.ndarray
    kinds: dict[str, int] = field(default_factory=dict)  # BG type name -> item kind
    actions: dict[str, int] = field(default_factory=dict)  # BG action name -> action code
    malformed: list[str] = field(default_factory=list)  # "file:line: why"
    files: int = 0


class BGInputError(ValueError):
    """A BG log or initial-values CSV that cannot be read at all; the message names it."""


def is_bg_log_dir(directory: Path) -> bool:
    return any(READ_FILE.match(p.name) or UPDATE_FILE.match(p.name) for p in directory.iterdir())


def read_bg_logs(directory: Path) -> BGLogs:
    out = BGLogs(np.empty(0, dtype=RECORD_DTYPE))
    rows: list[tuple[int, ...]] = []
    lines: list[str] = []  # "file:line" of each row
    sessions: dict[tuple[str, int, int], int] = {}
    for path in sorted(directory.iterdir()):
        m_read, m_update = READ_FILE.match(path.name), UPDATE_FILE.match(path.name)
        if not (m_read or m_update):
            continue
        out.files += 1
        machine = (m_read or m_update).group(1)  # type: ignore[union-attr]
        expect = "READ" if m_read else "UPDATE"
        for lineno, line, bad in text_lines(path):
            if bad:
                out.malformed.append(f"{path}:{lineno}: {bad}")
                continue
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(_parse(line, expect, machine, out, sessions))
            except ValueError as exc:
                out.malformed.append(f"{path}:{lineno}: {exc}")
                continue
            lines.append(f"{path}:{lineno}")
    if rows:
        out.records = _without_repeats(np.array(rows, dtype=RECORD_DTYPE), lines, out.malformed)
    return out


def _without_repeats(records: np.ndarray, lines: list[str], malformed: list[str]) -> np.ndarray:
    """The records with each repeated line (same thread, start, item, action and session as
    an earlier one: BG never logs one observation twice) listed as malformed and dropped; in
    the order of each thread's starts, as bgbench's own logs are (records.RecordSequence)."""
    keys = ("session", "action", "item_id", "item", "kind", "start", "thread")  # as in a log
    order = np.lexsort(tuple(records[k] for k in keys))
    ordered = records[order]
    repeat = np.ones(len(ordered) - 1, dtype=bool)
    for k in keys:
        repeat &= ordered[k][1:] == ordered[k][:-1]
    dropped = np.zeros(len(ordered), dtype=bool)
    for j in np.flatnonzero(repeat).tolist():
        first, again = sorted((int(order[j]), int(order[j + 1])))
        malformed.append(f"{lines[again]}: repeats the record of {lines[first]}")
        dropped[j + 1] = True
    return ordered[~dropped]


def text_lines(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line number, text, why it is malformed or ""), one per line: a line that is not
    UTF-8 is reported, never decoded with replacement characters into a different value."""
    try:
        f = open_regular(path, "BG file")  # a FIFO would block forever
    except UserError as exc:
        raise BGInputError(str(exc)) from None
    with f:
        for lineno, raw in enumerate(f, 1):
            try:
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                where = f"byte 0x{raw[exc.start]:02x} at column {exc.start + 1}"
                yield lineno, "", f"not UTF-8 text ({where})"
                continue
            yield lineno, text.rstrip("\r\n"), ""


def _int64(text: str, name: str, limit: int = INT64_MAX) -> int:
    """A decimal integer as BG writes them (Java's Long.toString): digits, maybe a minus;
    not Python's int() syntax ('1_00', ' 7', '+7', other scripts' digits)."""
    if not DECIMAL.fullmatch(text):
        raise ValueError(f"{name} {text!r} is not a decimal integer")
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{name} {text} does not fit in 64 bits")
    if abs(value) > limit:
        raise ValueError(f"{name} {text} is beyond +-{limit:,}")
    return value


def _parse(
    line: str, expect: str, machine: str, out: BGLogs, sessions: dict[tuple[str, int, int], int]
) -> tuple[int, ...]:
    f = line.split(",")
    n = 9 if expect == "READ" else 10
    if len(f) != n:
        raise ValueError(f"{expect} line needs {n} fields, has {len(f)}")
    if f[0] != expect:
        raise ValueError(f"expected {expect}, found {f[0]!r}")
    seq, thread, rid = _int64(f[2], "seqID"), _int64(f[3], "threadid"), _int64(f[4], "rid")
    start, end = _int64(f[5], "startNs", TIME_LIMIT), _int64(f[6], "endNs", TIME_LIMIT)
    if end < start:
        raise ValueError(f"ends before it starts ({end} < {start})")
    if expect == "READ" and end == INT64_MAX:
        raise ValueError(f"a read cannot end at {end}, bgbench's marker for 'never'")
    kind = out.kinds.setdefault(f[1], len(out.kinds))
    action = out.actions.setdefault(f[n - 1], len(out.actions))
    if kind > 255 or action > 255:
        raise ValueError("more than 256 item types or actions")
    session = sessions.setdefault((machine, thread, seq), len(sessions))
    if expect == "READ":
        observed = _int64(f[7], "observedValue", VALUE_LIMIT)
        return (READ, kind, action, thread & 0xFFFF, rid, start, end, observed, session)
    if f[8] not in ("I", "D"):
        raise ValueError(f"update type must be I or D, found {f[8]!r}")
    delta = 1 if f[8] == "I" else -1
    return (WRITE, kind, action, thread & 0xFFFF, rid, start, end, delta, session)


def read_initial_csv(path: Path, kinds: dict[str, int]) -> tuple[InitialValues, list[str]]:
    """Initial values from `type,rid,value` lines (a header line is allowed)."""
    per_kind: dict[int, tuple[list[int], list[int]]] = {}
    malformed: list[str] = []
    first_line: dict[tuple[int, int], int] = {}  # (kind, rid) -> the line that gave its value
    for lineno, line, bad in text_lines(path):
        if bad:
            malformed.append(f"{path}:{lineno}: {bad}")
            continue
        try:
            row = next(csv.reader([line]), []) if line.strip() else []
        except csv.Error as exc:  # a stray carriage return inside the line
            malformed.append(f"{path}:{lineno}: not a CSV line ({exc})")
            continue
        if not row or (lineno == 1 and row[0].strip().lower() == "type"):
            continue
        if len(row) != 3:
            malformed.append(f"{path}:{lineno}: needs type,rid,value")
            continue
        try:
            rid = _int64(row[1].strip(), "rid")
            value = _int64(row[2].strip(), "value", VALUE_LIMIT)
        except ValueError as exc:
            malformed.append(f"{path}:{lineno}: {exc}")
            continue
        kind = kinds.setdefault(row[0].strip(), len(kinds))
        if kind > 255:
            malformed.append(f"{path}:{lineno}: more than 256 item types")
            continue
        earlier = first_line.setdefault((kind, rid), lineno)
        if earlier != lineno:
            again = f"rid {rid} of {row[0].strip()} is also on line {earlier}"
            malformed.append(f"{path}:{lineno}: {again}")
            continue
        ids, values = per_kind.setdefault(kind, ([], []))
        ids.append(rid)
        values.append(value)
    by_kind = {}
    for kind, (ids, values) in per_kind.items():
        order = np.argsort(ids, kind="stable")
        by_kind[kind] = (np.array(ids, np.int64)[order], np.array(values, np.int64)[order])
    return InitialValues(by_kind), malformed
