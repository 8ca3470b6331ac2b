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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bgbench.validation.initial import InitialValues
from bgbench.validation.logformat import READ, RECORD_DTYPE, WRITE

READ_FILE = re.compile(r"^read(.*)-(\d+)\.txt$")
UPDATE_FILE = re.compile(r"^update(.*)-(\d+)\.txt$")


@dataclass
class BGLogs:
    records: np.ndarray
    kinds: dict[str, int] = field(default_factory=dict)  # BG type name -> item kind
    actions: dict[str, int] = field(default_factory=dict)  # BG action name -> action code
    malformed: list[str] = field(default_factory=list)  # "file:line: why"
    files: int = 0


def is_bg_log_dir(directory: Path) -> bool:
    return any(READ_FILE.match(p.name) or UPDATE_FILE.match(p.name) for p in directory.iterdir())


def read_bg_logs(directory: Path) -> BGLogs:
    out = BGLogs(np.empty(0, dtype=RECORD_DTYPE))
    rows: list[tuple] = []
    sessions: dict[tuple[str, int, int], int] = {}
    for path in sorted(directory.iterdir()):
        m_read, m_update = READ_FILE.match(path.name), UPDATE_FILE.match(path.name)
        if not (m_read or m_update):
            continue
        out.files += 1
        machine = (m_read or m_update).group(1)  # type: ignore[union-attr]
        expect = "READ" if m_read else "UPDATE"
        with open(path, errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rows.append(_parse(line, expect, machine, out, sessions))
                except ValueError as exc:
                    out.malformed.append(f"{path}:{lineno}: {exc}")
    if rows:
        out.records = np.array(rows, dtype=RECORD_DTYPE)
    return out


def _parse(line: str, expect: str, machine: str, out: BGLogs, sessions: dict) -> tuple:
    f = line.split(",")
    n = 9 if expect == "READ" else 10
    if len(f) != n:
        raise ValueError(f"{expect} line needs {n} fields, has {len(f)}")
    if f[0] != expect:
        raise ValueError(f"expected {expect}, found {f[0]!r}")
    try:
        seq, thread, rid, start, end = (int(x) for x in f[2:7])
    except ValueError:
        raise ValueError("seqID, threadid, rid, startNs and endNs must be integers") from None
    if end < start:
        raise ValueError(f"ends before it starts ({end} < {start})")
    kind = out.kinds.setdefault(f[1], len(out.kinds))
    action = out.actions.setdefault(f[n - 1], len(out.actions))
    if kind > 255 or action > 255:
        raise ValueError("more than 256 item types or actions")
    session = sessions.setdefault((machine, thread, seq), len(sessions))
    if expect == "READ":
        try:
            observed = int(f[7])
        except ValueError:
            raise ValueError(f"observed value {f[7]!r} is not an integer") from None
        return (READ, kind, action, thread & 0xFFFF, rid, start, end, observed, session)
    if f[8] not in ("I", "D"):
        raise ValueError(f"update type must be I or D, found {f[8]!r}")
    delta = 1 if f[8] == "I" else -1
    return (WRITE, kind, action, thread & 0xFFFF, rid, start, end, delta, session)


def read_initial_csv(path: Path, kinds: dict[str, int]) -> tuple[InitialValues, list[str]]:
    """Initial values from `type,rid,value` lines (a header line is allowed)."""
    per_kind: dict[int, tuple[list[int], list[int]]] = {}
    malformed: list[str] = []
    with open(path, newline="") as f:
        for lineno, row in enumerate(csv.reader(f), 1):
            if not row or (lineno == 1 and row[0].strip().lower() == "type"):
                continue
            if len(row) != 3:
                malformed.append(f"{path}:{lineno}: needs type,rid,value")
                continue
            try:
                rid, value = int(row[1]), int(row[2])
            except ValueError:
                malformed.append(f"{path}:{lineno}: rid and value must be integers")
                continue
            kind = kinds.setdefault(row[0].strip(), len(kinds))
            ids, values = per_kind.setdefault(kind, ([], []))
            ids.append(rid)
            values.append(value)
    by_kind = {}
    for kind, (ids, values) in per_kind.items():
        order = np.argsort(ids, kind="stable")
        by_kind[kind] = (np.array(ids, np.int64)[order], np.array(values, np.int64)[order])
    return InitialValues(by_kind), malformed
