"""Validating many stored logs: each against its own initial values, counts added.

One log file is one fragment of one experiment, self-contained: the fragment's items
started from the values in the initial-f<k>.npz beside it, and its session ids are only
unique within it (thread << 40 + n). So logs are never merged into one history: each is
validated alone, exactly as the agent's online check does, and the results are added
(sessions summed per log, never united across logs).

Small logs are validated side by side in forked processes (one core each, as many at once
as `workers` and the memory budget allow); a large log gets every worker to itself, or
goes out of core when it does not fit the budget (bgbench.validation.runner).
"""

import multiprocessing as mp
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bgbench.validation.checker import ValidationResult
from bgbench.validation.initial import InitialFormatError, load_initial
from bgbench.validation.logformat import (
    LogFormatError,
    LogInfo,
    UnfinishedLogError,
    inspect_log,
)
from bgbench.validation.runner import (
    MEMORY_PER_LOG_BYTE,
    PARALLEL_FROM,
    RunInfo,
    usable_workers,
    validate_logs,
)

LOG_GLOB = "log-f*.bglog"
WORKLOAD_FILE = "workload.txt"  # beside the logs: the workload that wrote them
COUNTS = ("reads", "unpredictable_reads", "writes", "sessions", "unpredictable_sessions")


@dataclass(frozen=True)
class StoredLog:
    path: Path
    initial: Path
    name: str  # the path relative to the directory searched
    experiment: str  # the experiment's id: the name of the log's directory
    info: LogInfo


@dataclass(frozen=True)
class Unfinished:
    """A log skipped because its writer never closed it."""

    log: str
    experiment: str
    reason: str


@dataclass
class LogOutcome:
    log: StoredLog
    result: ValidationResult
    info: RunInfo


class LogSetError(ValueError):
    """A log or its initial values cannot be validated; the message names the file."""


def initial_path_of(log: Path) -> Path:
    return log.with_name(log.name.replace("log-", "initial-", 1).replace(".bglog", ".npz"))


def find_logs(directory: Path) -> tuple[list[StoredLog], list[Unfinished]]:
    """Every log below `directory`: finished ones (header and trailer checked, initial values
    present) and unfinished ones (no trailer). A damaged log raises LogFormatError."""
    found: list[StoredLog] = []
    unfinished: list[Unfinished] = []
    for path in sorted(directory.rglob(LOG_GLOB)):
        name = str(path.relative_to(directory))
        try:
            info = inspect_log(path)
        except UnfinishedLogError as exc:
            unfinished.append(Unfinished(name, path.parent.name, str(exc)))
            continue
        initial = initial_path_of(path)
        if not initial.exists():  # anything else there is refused when read (a FIFO too)
            raise LogSetError(f"{path}: no initial values beside it ({initial.name} is missing)")
        found.append(StoredLog(path, initial, name, path.parent.name, info))
    return found, unfinished


def validate_one(
    log: StoredLog,
    budget_bytes: int,
    workers: int,
    keep_reads: bool = False,
    work_dir: Path | None = None,
) -> LogOutcome:
    initial = load_initial(log.initial, budget_bytes)  # InitialFormatError names the file
    try:
        result, info = validate_logs(
            [log.path], initial, budget_bytes, workers, keep_reads, work_dir
        )
    except ValueError as exc:  # the checker's: an unknown item, mixed write kinds
        raise LogSetError(f"{log.path}: {exc}") from None
    for read in (*result.examples, *result.unpredictable):
        read["log"] = log.name
    return LogOutcome(log, result, info)


_JOBS: dict[str, Any] = {}


def _pooled(index: int) -> LogOutcome | str:
    """One small log in a forked worker; an error comes back as its one-line message."""
    try:
        return validate_one(_JOBS["logs"][index], *_JOBS["args"])
    except (LogFormatError, InitialFormatError, LogSetError) as exc:
        return str(exc)


def validate_stored(
    logs: list[StoredLog],
    budget_bytes: int,
    workers: int | None = None,
    keep_reads: bool = False,
    work_dir: Path | None = None,
) -> tuple[list[LogOutcome], int]:
    """Each log validated alone; (outcomes in the order of `logs`, processes used at most)."""
    workers, _ = usable_workers(workers, budget_bytes)
    outcomes: dict[int, LogOutcome] = {}
    small = [
        i
        for i, log in enumerate(logs)
        if log.info.records < PARALLEL_FROM and log.info.size * MEMORY_PER_LOG_BYTE <= budget_bytes
    ]
    largest = max((logs[i].info.size * MEMORY_PER_LOG_BYTE for i in small), default=1)
    side_by_side = min(workers, len(small), max(1, budget_bytes // max(largest, 1)))
    if side_by_side > 1:
        _JOBS.update(logs=logs, args=(budget_bytes, 1, keep_reads, work_dir))
        try:
            with mp.get_context("fork").Pool(side_by_side) as pool:
                done = pool.map(_pooled, small, chunksize=1)
        finally:
            _JOBS.clear()
        for i, outcome in zip(small, done, strict=True):
            if isinstance(outcome, str):
                raise LogSetError(outcome)
            outcomes[i] = outcome
    for i, log in enumerate(logs):
        if i not in outcomes:
            outcomes[i] = validate_one(log, budget_bytes, workers, keep_reads, work_dir)
    used = max([side_by_side, *(o.info.workers for o in outcomes.values())])
    return [outcomes[i] for i in range(len(logs))], used


def total(outcomes: list[LogOutcome], workers: int) -> tuple[ValidationResult, RunInfo]:
    """All logs' counts added (sessions summed: a session belongs to one log)."""
    result = ValidationResult()
    for o in outcomes:
        result.merge(o.result)
    engines = sorted({o.info.engine for o in outcomes})
    info = RunInfo(
        "+".join(engines) or "memory",
        sum(o.info.parts for o in outcomes),
        workers,
        sum(o.info.records for o in outcomes),
        sum(o.info.log_bytes for o in outcomes),
    )
    return result, info


def per_experiment(outcomes: list[LogOutcome]) -> list[dict[str, Any]]:
    """Counts per experiment (its logs on every agent), in the order first met."""
    experiments: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        e = experiments.setdefault(
            o.log.experiment,
            {"experiment": o.log.experiment, "logs": [], **dict.fromkeys(COUNTS, 0)},
        )
        e["logs"].append(o.log.name)
        for name in COUNTS:
            e[name] += getattr(o.result, name)
    return list(experiments.values())
