"""`bgbench validate DIR`: re-run validation on stored logs (Jepsen's `analyze` idea).

DIR holds bgbench logs (log-f<k>.bglog with initial-f<k>.npz beside each, found
recursively: an experiment's directory, an agent's, or a whole rating's) or the
original BG Java logs (read<machine>-<thread>.txt, update<machine>-<thread>.txt)
with initial values from a CSV or one default.

Each bgbench log is one fragment of one experiment and is validated alone against its
own initial values; the counts are added, and reported per experiment too
(bgbench.validation.logset). A log without its trailer (its experiment never finished)
stops the command unless allow_unfinished, which skips it and lists it in the report.
"""

import csv
import errno
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bgbench.errors import SystemFault, UserError
from bgbench.inputs import check_output, check_regular, open_output
from bgbench.validation.bglogs import BGInputError, is_bg_log_dir, read_bg_logs, read_initial_csv
from bgbench.validation.checker import ValidationResult
from bgbench.validation.initial import InitialFormatError, InitialValues
from bgbench.validation.logformat import LogFormatError, LogWriter
from bgbench.validation.logset import (
    WORKLOAD_FILE,
    LogSetError,
    Unfinished,
    find_logs,
    per_experiment,
    total,
    validate_stored,
)
from bgbench.validation.records import VALUE_LIMIT
from bgbench.validation.runner import RunInfo, usable_workers, validate_logs
from bgbench.workloads import registry

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
    # bgbench logs: counts per experiment
    experiments: list[dict[str, Any]] = field(default_factory=list)
    unfinished: list[Unfinished] = field(default_factory=list)  # logs skipped, never closed
    workers_note: str = ""  # why fewer workers than asked ran, e.g. "--workers 32 capped at 2"

    def to_dict(self) -> dict[str, Any]:
        r = self.result

        def name(names: dict[int, str], k: int) -> str:
            return names.get(k, str(k))

        return {
            "source": self.source,
            "directory": self.directory,
            "logs": self.logs,
            "experiments_validated": len(self.experiments),
            "unfinished_skipped": len(self.unfinished),
            "engine": self.info.engine,
            "parts": self.info.parts,
            "workers": self.info.workers,
            "workers_note": self.workers_note,
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
            "visibility": r.visibility.rows(self.action_names, self.item_names),
            "never_visible": r.visibility.never_total,
            "examples": r.examples,
            "malformed_lines": len(self.malformed),
            "malformed": self.malformed[:100],
            "experiments": self.experiments,
            "unfinished": [
                {"log": u.log, "experiment": u.experiment, "reason": u.reason}
                for u in self.unfinished
            ],
        }


def validate_directory(
    directory: Path,
    budget_bytes: int,
    workers: int | None,
    initial_csv: Path | None = None,
    initial_default: int | None = None,
    keep_reads: bool = False,
    allow_malformed: bool = False,
    allow_unfinished: bool = False,
) -> OfflineReport:
    if not directory.is_dir():
        raise UserError(f"{directory} is not a directory")
    if workers is not None and workers < 1:
        raise UserError(f"--workers {workers}: use 1 or more (default: every core)")
    if initial_default is not None and abs(initial_default) > VALUE_LIMIT:
        raise UserError(f"--initial-default {initial_default} is beyond +-2^53, not a count")
    workers, note = usable_workers(workers, budget_bytes)
    t0 = time.perf_counter()
    try:
        if is_bg_log_dir(directory):
            report = _validate_bg(
                directory, budget_bytes, workers, initial_csv, initial_default, keep_reads,
                allow_malformed, t0,
            )  # fmt: skip
        else:
            report = _validate_bgbench(
                directory, budget_bytes, workers, keep_reads, allow_unfinished, t0
            )
        report.workers_note = note
        return report
    except (LogFormatError, InitialFormatError, LogSetError, BGInputError) as exc:
        raise UserError(str(exc)) from None  # each names its file (and byte offset in a log)


def _names_of(log_dir: Path) -> tuple[dict[int, str], dict[int, str]]:
    """Item and action names of the workload whose engine wrote the logs (it leaves its
    name beside them); numbers when the workload is not installed here."""
    try:
        name = (log_dir / WORKLOAD_FILE).read_text(encoding="utf-8").strip()
        workload = registry.get(name)
    except (OSError, UserError):
        return {}, {}
    return dict(workload.items), dict(workload.actions)


def _validate_bgbench(
    directory: Path,
    budget_bytes: int,
    workers: int | None,
    keep_reads: bool,
    allow_unfinished: bool,
    t0: float,
) -> OfflineReport:
    logs, unfinished = find_logs(directory)
    if not logs and not unfinished:
        raise UserError(f"no logs in {directory}: expected log-f<k>.bglog or BG's read*.txt files")
    if unfinished and not allow_unfinished:
        raise UserError(
            f"{unfinished[0].reason} ({len(unfinished)} of {len(logs) + len(unfinished)} logs "
            "were never closed); validate the finished experiments' directories, or pass "
            "--allow-unfinished to skip the unfinished logs and list them"
        )
    if not logs:
        raise UserError(
            f"no finished logs in {directory}: all {len(unfinished)} were never closed, e.g. "
            f"{unfinished[0].reason}"
        )
    outcomes, used = validate_stored(logs, budget_bytes, workers, keep_reads)
    result, info = total(outcomes, used)
    return OfflineReport(
        "bgbench",
        str(directory),
        len(logs),
        result,
        info,
        time.perf_counter() - t0,
        *_names_of(logs[0].path.parent),
        experiments=per_experiment(outcomes),
        unfinished=unfinished,
    )


def _validate_bg(
    directory: Path, budget_bytes: int, workers: int | None, initial_csv: Path | None,
    initial_default: int | None, keep_reads: bool, allow_malformed: bool, t0: float,
) -> OfflineReport:  # fmt: skip
    if initial_csv is None and initial_default is None:
        raise UserError(
            "BG logs need initial values: --initial FILE.csv (type,rid,value) or "
            "--initial-default N"
        )
    if initial_csv is not None:
        check_regular(initial_csv, "--initial")  # a FIFO would block forever
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
        except ValueError as exc:  # the checker's: an item without an initial value
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


def check_per_read(path: Path) -> None:
    """Refuse a --per-read path that cannot be written (a directory, a FIFO, a device such as
    /dev/full, a missing directory), before any validation runs."""
    check_output(path, "--per-read")


def write_per_read(report: OfflineReport, path: Path) -> int:
    check_per_read(path)
    rows = report.result.unpredictable
    fields = ["item", "item_id", "start", "end", "observed", "initial", "lag_ms", "action",
              "session", "thread"]  # fmt: skip
    if report.source == "bgbench":
        fields.append("log")  # which log (fragment of which experiment) the read is from
    try:
        with open_output(path, "--per-read") as f:
            w = csv.DictWriter(f, fieldnames=fields, lineterminator="\r\n")
            w.writeheader()
            for row in rows:
                w.writerow(
                    {
                        **{k: row[k] for k in fields},
                        "item": report.item_names.get(row["item"], row["item"]),
                        "action": report.action_names.get(row["action"], row["action"]),
                    }
                )
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            raise SystemFault(f"--per-read {path}: cannot write it: {reason}") from None
        raise UserError(f"--per-read {path}: cannot write it: {reason}") from None
    return len(rows)
