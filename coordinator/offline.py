"""`bgbench validate DIR`: re-run validation on stored logs (Jepsen's `analyze` idea).

DIR holds bgbench logs (log-f<k>.bglog with initial-f<k>.npz beside each, found
recursively: an experiment's directory, an agent's, or a whole rating's) or the
original BG Java logs (read<machine>-<thread>.txt, update<machine>-<thread>.txt)
with initial values from a CSV or one default.
"""

import csv
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bgbench.errors import UserError
from bgbench.validation.bglogs import is_bg_log_dir, read_bg_logs, read_initial_csv
from bgbench.validation.checker import ValidationResult
from bgbench.validation.initial import InitialValues, load_initial
from bgbench.validation.logformat import LogFormatError, LogWriter
from bgbench.validation.runner import RunInfo, validate_logs
from bgbench.workloads.bg.actions import ITEM_NAMES, Action

SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
UNITS = {"": 1, "b": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_size(text: str) -> int:
    """'2GiB', '512MB', '1e9'-free plain bytes: a memory budget in bytes."""
    m = SIZE.match(text)
    if not m:
        raise UserError(f"--memory-budget {text!r}: use a size such as 512MiB or 2GB")
    unit = (m.group(2) or "").lower()
    base = 1024 ** "bkmgt".index(unit[0]) if "i" in unit else UNITS[unit[:1]]
    return int(float(m.group(1)) * base)


@dataclass
class OfflineReport:
    source: str  # "bgbench" or "bg"
    directory: str
    logs: int
    result: ValidationResult
    info: RunInfo
    seconds: float
    item_names: dict[int, str] = field(default_factory=dict)
    action_names: dict[int, str] = field(default_factory=dict)
    malformed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        r = self.result
        name = lambda names, k: names.get(k, str(k))  # noqa: E731
        return {
            "source": self.source,
            "directory": self.directory,
            "logs": self.logs,
            "engine": self.info.engine,
            "parts": self.info.parts,
            "workers": self.info.workers,
            "records": self.info.records,
            "seconds": self.seconds,
            "records_per_s": self.info.records / self.seconds if self.seconds else None,
            "reads": r.reads,
            "writes": r.writes,
            "unpredictable_reads": r.unpredictable_reads,
            "unpredictable_percent": r.unpredictable_percent,
            "sessions": r.sessions,
            "unpredictable_sessions": r.unpredictable_sessions,
            "by_item": {
                name(self.item_names, k): {
                    "reads": n,
                    "unpredictable": r.unpredictable_by_item.get(k, 0),
                }
                for k, n in r.reads_by_item.items()
            },
            "by_action": {
                name(self.action_names, k): {
                    "reads": n,
                    "unpredictable": r.unpredictable_by_action.get(k, 0),
                }
                for k, n in r.reads_by_action.items()
            },
            "lag": r.lag_summary(),
            "never_valid": r.never_valid,
            "examples": r.examples,
            "malformed_lines": len(self.malformed),
            "malformed": self.malformed[:100],
        }


def _bgbench_logs(directory: Path) -> tuple[list[Path], InitialValues]:
    logs = sorted(directory.rglob("log-f*.bglog"))
    if not logs:
        raise UserError(f"no logs in {directory}: expected log-f<k>.bglog or BG's read*.txt files")
    parts: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    for log in logs:
        initial_file = log.with_name(log.name.replace("log-", "initial-").replace(".bglog", ".npz"))
        if not initial_file.exists():
            raise UserError(f"{log} has no initial values beside it ({initial_file.name})")
        for kind, (ids, values) in load_initial(initial_file).by_kind.items():
            parts.setdefault(kind, ([], []))
            parts[kind][0].append(ids)
            parts[kind][1].append(values)
    by_kind = {}
    for kind, (ids, values) in parts.items():
        all_ids, all_values = np.concatenate(ids), np.concatenate(values)
        order = np.argsort(all_ids, kind="stable")
        by_kind[kind] = (all_ids[order], all_values[order])
    return logs, InitialValues(by_kind)


def validate_directory(
    directory: Path,
    budget_bytes: int,
    workers: int | None,
    initial_csv: Path | None = None,
    initial_default: int | None = None,
    keep_reads: bool = False,
    allow_malformed: bool = False,
) -> OfflineReport:
    if not directory.is_dir():
        raise UserError(f"{directory} is not a directory")
    t0 = time.perf_counter()
    if is_bg_log_dir(directory):
        return _validate_bg(
            directory, budget_bytes, workers, initial_csv, initial_default, keep_reads,
            allow_malformed, t0,
        )  # fmt: skip
    logs, initial = _bgbench_logs(directory)
    try:
        result, info = validate_logs(logs, initial, budget_bytes, workers, keep_reads)
    except (LogFormatError, ValueError) as exc:
        raise UserError(str(exc)) from None
    return OfflineReport(
        "bgbench",
        str(directory),
        len(logs),
        result,
        info,
        time.perf_counter() - t0,
        {int(k): v for k, v in ITEM_NAMES.items()},
        {a.value: a.name for a in Action},
    )


def _validate_bg(
    directory, budget_bytes, workers, initial_csv, initial_default, keep_reads,
    allow_malformed, t0,
) -> OfflineReport:  # fmt: skip
    if initial_csv is None and initial_default is None:
        raise UserError(
            "BG logs need initial values: --initial FILE.csv (type,rid,value) or "
            "--initial-default N"
        )
    bg = read_bg_logs(directory)
    malformed = list(bg.malformed)
    if initial_csv is not None:
        initial, bad_csv = read_initial_csv(initial_csv, bg.kinds)
        malformed += bad_csv
        initial = InitialValues(initial.by_kind, initial_default)
    else:
        initial = InitialValues({}, initial_default)
    if malformed and not allow_malformed:
        raise UserError(
            f"{len(malformed)} malformed lines, the first {malformed[0]}; fix them or pass "
            "--allow-malformed to validate the rest and list them"
        )
    with _as_bglog(bg.records) as path:
        try:
            result, info = validate_logs([path], initial, budget_bytes, workers, keep_reads)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    return OfflineReport(
        "bg",
        str(directory),
        bg.files,
        result,
        info,
        time.perf_counter() - t0,
        {v: k for k, v in bg.kinds.items()},
        {v: k for k, v in bg.actions.items()},
        malformed,
    )


class _as_bglog:
    """BG's records written once as a bgbench log, so both go through one runner."""

    def __init__(self, records: np.ndarray) -> None:
        import tempfile

        self._dir = tempfile.TemporaryDirectory()
        self.path = Path(self._dir.name) / "log-f0.bglog"
        w = LogWriter(self.path)
        w.append(records)
        w.close()

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self._dir.cleanup()


def write_per_read(report: OfflineReport, path: Path) -> int:
    rows = report.result.unpredictable
    fields = ["item", "item_id", "start", "end", "observed", "initial", "lag_ms", "action",
              "session", "thread"]  # fmt: skip
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for row in rows:
            w.writerow(
                {
                    **{k: row[k] for k in fields},
                    "item": report.item_names.get(row["item"], row["item"]),
                    "action": report.action_names.get(row["action"], row["action"]),
                }
            )
    return len(rows)
