"""Ratings and single experiments as an API: settings and a results store in, a record out.

The CLI only parses flags, calls these and renders what they return and emit; campaigns
and the deck call them the same way. Nothing here prints: lines go to `say`, the live view
follows `events`. A rating that an infrastructure fault ends is recorded as failed and
returned as such (its `fault` says what happened and how to resume); bad input raises
UserError and an interrupt propagates, both recorded first. `run` records its one
experiment, a fault included, and returns it.
"""

import contextlib
import json
import os
import secrets
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.execution.checkconfig import check_scenario_before_start
from bgbench.coordinator.execution.experiment import faulted, new_experiment_id, save
from bgbench.coordinator.execution.target import ExperimentTarget
from bgbench.coordinator.execution.target_kinds import target_kind
from bgbench.coordinator.rating.bottleneck_of import final_bottleneck
from bgbench.coordinator.rating.ratings import Rating, RatingSummary
from bgbench.coordinator.rating.resume import resolve_at_origin, resumed_settings
from bgbench.coordinator.rating.transactions_of import final_transactions
from bgbench.coordinator.records.events import (
    EventSink,
    ExperimentEnded,
    ExperimentResultReady,
    ExperimentStarted,
    RatingEnded,
    RatingStarted,
    Say,
    silent,
)
from bgbench.coordinator.records.faults import (
    fault_time,
    record_failure,
    recorded_kind,
    run_failure,
)
from bgbench.coordinator.records.sweep import Limits, SweepTable, clip
from bgbench.coordinator.storage.location import Location, ResultsURL, results_url
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.coordinator.storage.store_file import StoreFault
from bgbench.errors import BGBenchError, SystemFault, UserError
from bgbench.run_result import ExperimentResult
from bgbench.workloads import registry

RUN_OBJECTIVE = "run"  # what a `bgbench run` is recorded as in the results store


@dataclass(frozen=True)
class ExperimentRecord:
    """One experiment of a rating as the results store holds it (its full result is in
    the store's result_json)."""

    seq: int
    phase: str  # warmup | search | final | sweep | retried
    threads: int
    duration_s: float
    status: str  # passed | failed | fault
    actions_per_s: float
    within_percent: float
    unpredictable_percent: float
    reasons: str


@dataclass(frozen=True)
class RatingRecord:
    rating_id: str
    status: str  # done | failed | running
    objective: str
    store: str
    results: Location  # the results store's file, or its URL
    soar: float | None
    soar_threads: int | None
    socialites: int | None
    fault: str = ""  # why it failed, in one line (with how to resume when it can be)
    fault_kind: str = ""  # faults.FaultKind of a failed rating
    summary: RatingSummary | None = None
    experiments: tuple[ExperimentRecord, ...] = ()


@dataclass(frozen=True)
class RunRecord:
    result: ExperimentResult
    path: Path  # the JSON file it is recorded in
    unrecorded: str = ""  # why it could not be recorded in full (a disk filled up, say)


def results_path(path: Path) -> Path:
    """An absolute results directory (recorded, and printed in resume hints), never a file."""
    path = path.expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise UserError(f"results directory {path} is a file: give --results a directory")
    return path


def open_results(directory: Path, url: ResultsURL | None = None) -> ResultsStore:
    """The results store of `directory` (created if need be; with `url`, that PostgreSQL
    database, `directory` holding the work files), proven writable before any work
    starts: a run or a rating whose results could not be recorded must not start. A file
    is written and synced in the directory (a full disk fails here) and a write is tried
    in the store itself (a read-only store fails here), both undone."""
    path = results_path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)  # a PostgreSQL store's work directory too
        store = ResultsStore(path, url)
        with tempfile.TemporaryFile(dir=path) as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
        store.try_write()
    except (OSError, sqlite3.Error, StoreFault) as exc:
        reason = _reason(exc)
        where = f"results store {url}" if url is not None else f"results directory {path}"
        raise UserError(
            f"{where} cannot be written ({reason}): give --results a writable directory"
            + (" or database" if url is not None else "")
        ) from None
    return store


def settings_url(settings: Settings) -> ResultsURL | None:
    """The PostgreSQL store settings name in results.url (None: results_dir's file)."""
    return results_url(settings.results.url, "results.url") if settings.results.url else None


def new_rating_id() -> str:
    return "R" + time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def rate(
    settings: Settings | None,
    results: ResultsStore | Location,
    *,
    resume: str | None = None,
    say: Say = silent,
    rating_id: str | None = None,
    events: EventSink | None = None,
    base_dir: Path | None = None,
) -> RatingRecord:
    """Run a rating of `settings`, recorded in `results` (a results store, or the directory
    of one); its record. With `resume`, continue that unfinished rating of `results`
    instead: `settings` is then its recorded settings (settings_to_resume gives them, with
    redacted secrets given again), or None when it recorded no secret. A new rating takes
    `rating_id` when given (a campaign records it before the rating starts); relative paths
    in its settings are recorded as relative to `base_dir` (the current directory when not
    given). A resume resolves them against the directory its rating started in, so they
    name the same files. `events` follows it live (coordinator/records/events.py); lines
    for the user go to `say`."""
    if resume is not None:
        store = results if isinstance(results, ResultsStore) else _existing(results)
        settings = _to_resume(store, resume, settings, say)
        rating_id = resume
    else:
        if settings is None:
            raise UserError("a new rating needs its settings")
        where, url = _store_of(results, settings)
        settings.results_dir = results_path(where)
        kind = target_kind(settings)
        kind.resolve_layout(settings, None)
        kind.check_before_start(settings)
        check_scenario_before_start(settings, "rate")
        store = open_results(settings.results_dir, url)
        rating_id = rating_id or new_rating_id()
        store.start_rating(
            rating_id,
            settings.rating.objective,
            settings.store.name,
            settings.model_dump_json(),
            str((base_dir or Path.cwd()).absolute()),
        )
    say(f"rating {rating_id}: results in {store.path}")
    if events:
        objective = settings.rating.objective
        events.emit(RatingStarted(rating_id, objective, settings.store.name, resume is not None))
    try:
        try:
            summary = _execute(settings, store, rating_id, say, events)
        except (OSError, sqlite3.Error, StoreFault) as exc:  # a full disk: one line, exit 3
            raise SystemFault(_unwritable(store, exc)) from None
    except SystemFault as exc:  # recorded and returned: the caller may rate the next one
        try:
            message = record_failure(store, rating_id, exc, store.shown)
            if events:
                events.emit(RatingEnded(rating_id, "failed", message=message))
            return rating_record(store, rating_id)
        except (OSError, sqlite3.Error, StoreFault):  # nor can the store (left resumable)
            raise exc from None
    except (BGBenchError, KeyboardInterrupt) as exc:
        message = record_failure(store, rating_id, exc, store.shown)
        if events:
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            events.emit(RatingEnded(rating_id, status, message=message))
        raise
    store.finish_rating(
        rating_id,
        "done",
        summary.soar,
        summary.soar_threads,
        summary.socialites,
        summary.to_dict(),
    )
    if events:
        events.emit(
            RatingEnded(rating_id, "done", summary.soar, summary.soar_threads, summary.socialites)
        )
    return rating_record(store, rating_id)


def _store_of(
    results: ResultsStore | Location, settings: Settings
) -> tuple[Path, ResultsURL | None]:
    """The work directory and the PostgreSQL store (if any) a new rating records into."""
    if isinstance(results, ResultsStore):
        return results.work_dir, results.url
    if isinstance(results, ResultsURL):
        return settings.results_dir, results
    return results, settings_url(settings)


def _reason(exc: OSError | sqlite3.Error | StoreFault) -> str:
    if isinstance(exc, StoreFault):
        return exc.reason
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def _unwritable(store: ResultsStore, exc: OSError | sqlite3.Error | StoreFault) -> str:
    if isinstance(exc, OSError):
        return f"cannot write {exc.filename or 'a file'}: {exc.strerror or exc}"
    return f"results store {store.path} cannot be written: {_reason(exc)}"


def _execute(
    settings: Settings,
    store: ResultsStore,
    rating_id: str,
    say: Say,
    events: EventSink | None = None,
) -> RatingSummary:
    def ended(phase: str, r: ExperimentResult) -> None:
        if events:
            events.emit(ExperimentResultReady(phase, r, settings.sla.beta_ms))
            events.emit(ExperimentEnded.of(phase, r))

    def started(phase: str, threads: int, duration: float, experiment_id: str) -> None:
        if events:
            events.emit(ExperimentStarted(experiment_id, phase, threads, duration))

    work_dir = settings.results_dir / rating_id
    with target_kind(settings).bring_up(settings, work_dir, say, events) as target:
        store.set_hosts(rating_id, target.hosts(), target.versions())
        store.update_config(rating_id, settings.model_dump_json())  # measured capacities
        target.record_fault = lambda r: store.add_experiment(rating_id, "retried", r)
        rating = Rating(rating_id, settings, target.run, store, ended, started)
        if settings.rating.objective == "sweep":
            plan = clip(settings.rating.sweep_threads, sweep_limits(settings, target))
            for line in plan.clipped:
                say(line)
            summary = rating.sweep(plan, target.min_threads())
        else:
            summary = rating.execute(target.max_threads(), target.min_threads())
    threads = summary.soar_threads or summary.socialites
    recorded = store.experiments(rating_id)
    summary.bottleneck = final_bottleneck(recorded, threads)
    summary.transactions = final_transactions(recorded, threads)
    return summary


def sweep_limits(settings: Settings, target: ExperimentTarget) -> Limits:
    """What bounds a sweep's T on this target (the model store fits any T)."""
    workload = registry.get(settings.workload.name)
    return Limits(
        floor=target.min_threads(),
        fit=target.fit_threads(),
        setting=settings.rating.max_threads,
        scale=f"{workload.name}.{workload.scale_parameter}",
    )


def sweep_table(results: ResultsStore | Location, rating_id: str) -> SweepTable:
    """The table of a finished sweep (`rating.objective = "sweep"`)."""
    store = results if isinstance(results, ResultsStore) else _existing(results)
    row = store.rating(rating_id)
    summary = json.loads(row["summary_json"]) if row["summary_json"] else None
    if summary and summary.get("sweep"):
        return SweepTable.from_dict(summary["sweep"])
    if row["objective"] != "sweep":
        raise UserError(
            f"rating {rating_id} is not a sweep (objective {row['objective']}): see "
            f"bgbench results show {rating_id}"
        )
    raise UserError(
        f"sweep {rating_id} has no table yet ({row['status']}): finish it with "
        f"bgbench rate --resume {rating_id} --results {store.shown}"
    )


def rating_record(results: ResultsStore | Location, rating_id: str) -> RatingRecord:
    """A recorded rating, whatever its status."""
    store = results if isinstance(results, ResultsStore) else _existing(results)
    row = store.rating(rating_id)
    failed = row["status"] == "failed"
    summary = json.loads(row["summary_json"]) if row["summary_json"] else None
    return RatingRecord(
        rating_id=rating_id,
        status=row["status"],
        objective=row["objective"],
        store=row["store"],
        results=store.path,
        soar=row["soar"],
        soar_threads=row["soar_threads"],
        socialites=row["socialites"],
        fault=row["message"] if failed else "",
        fault_kind=recorded_kind(row["message"]).value if failed else "",
        # a study's summary is its tables (coordinator/rating/study.py), not a rating's
        summary=RatingSummary.from_dict(summary) if summary and "tables" not in summary else None,
        experiments=tuple(
            ExperimentRecord(
                seq=e["seq"],
                phase=e["phase"],
                threads=e["threads"],
                duration_s=e["duration_s"],
                status=e["status"],
                actions_per_s=e["actions_per_s"],
                within_percent=e["within_percent"],
                unpredictable_percent=e["unpredictable_percent"],
                reasons=e["reasons"],
            )
            for e in store.experiments(rating_id)
        ),
    )


def settings_to_resume(
    results: ResultsStore | Location, rating_id: str, overrides: list[tuple[str, Any]]
) -> Settings:
    """The recorded settings of an unfinished rating, its redacted secrets given again in
    `overrides` (nothing else may change)."""
    store = results if isinstance(results, ResultsStore) else _existing(results)
    row = _unfinished(store, rating_id)
    return resumed_settings(row, overrides, store.work_dir)


def _existing(where: Location) -> ResultsStore:
    return ResultsStore.existing(where if isinstance(where, ResultsURL) else results_path(where))


def _unfinished(store: ResultsStore, rating_id: str) -> dict[str, Any]:
    row = store.rating(rating_id)
    if row["objective"] == RUN_OBJECTIVE:
        raise UserError(f"{rating_id} is a single run, not a rating: run it again with bgbench run")
    if row["status"] == "done":
        raise UserError(f"rating {rating_id} is finished: see bgbench results show {rating_id}")
    return row


def _to_resume(
    store: ResultsStore, rating_id: str, settings: Settings | None, say: Say
) -> Settings:
    row = _unfinished(store, rating_id)
    if settings is None:
        settings = resumed_settings(row, [], store.work_dir)
    settings.results_dir = store.work_dir  # the store it was given, wherever that is now
    target_kind(settings).resolve_layout(settings, None)  # recorded before "auto" existed
    resolve_at_origin(settings, row, say)
    say(f"resuming rating {rating_id} with its recorded settings")
    return settings


def run(
    settings: Settings,
    *,
    say: Say = silent,
    events: EventSink | None = None,
    base_dir: Path | None = None,
) -> RunRecord:
    """One experiment at run.threadcount for run.maxexecutiontime (`bgbench run`), on the
    listed agents or local ones. It is recorded, an infrastructure fault included (even
    one that kept it from starting: a load that made no progress, say), in the results
    store of results_dir (as a record of objective "run") and in results_dir/ID/ID.json.
    `events` follows it live: a start, progress, its verdict and an end, under its id;
    relative paths in its settings are recorded as relative to `base_dir` (default: the
    current directory)."""
    settings.results_dir = results_path(settings.results_dir)
    threads = settings.run.threadcount
    kind = target_kind(settings)
    kind.resolve_layout(settings, threads)
    kind.check_before_start(settings, threads)  # as a rating does: bad input before the store
    check_scenario_before_start(settings, "run")
    store = open_results(settings.results_dir, settings_url(settings))
    experiment_id = new_experiment_id(threads)
    run_dir = settings.results_dir / experiment_id
    duration = settings.run.maxexecutiontime
    retried: list[ExperimentResult] = []
    hosts: list[dict[str, Any]] = []
    versions: dict[str, str] = {}
    if events:
        events.emit(RatingStarted(experiment_id, RUN_OBJECTIVE, settings.store.name))
        events.emit(ExperimentStarted(experiment_id, RUN_OBJECTIVE, threads, duration))
    try:
        with kind.bring_up(settings, run_dir, say, events) as target:
            hosts, versions = target.hosts(), target.versions()
            target.record_fault = retried.append
            result = target.run(threads, duration, experiment_id)
    except SystemFault as exc:
        result = faulted(experiment_id, threads, duration, "", [], str(exc), fault_time(exc))
    except (BGBenchError, KeyboardInterrupt) as exc:
        if events:
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            events.emit(RatingEnded(experiment_id, status, message=str(exc)))
        raise
    path = run_dir / f"{experiment_id}.json"
    failures = []
    try:  # each record on its own: one that fails loses nothing the other holds
        path = save(result, run_dir)
    except OSError as exc:
        failures.append(f"{path}: {exc.strerror or exc}")
    try:
        _record_run(store, settings, result, retried, hosts, versions, base_dir or Path.cwd())
    except (OSError, sqlite3.Error, StoreFault) as exc:
        failures.append(f"{store.path}: {_reason(exc)}")
    if events:
        events.emit(ExperimentEnded.of(RUN_OBJECTIVE, result))
        status = "failed" if result.fault else "done"
        events.emit(RatingEnded(experiment_id, status, message=result.fault))
    unrecorded = ""
    if failures:
        unrecorded = f"run {experiment_id} could not be recorded in " + "; ".join(failures)
    return RunRecord(result, path, unrecorded)


def _record_run(
    store: ResultsStore,
    settings: Settings,
    result: ExperimentResult,
    retried: list[ExperimentResult],
    hosts: list[dict[str, Any]],
    versions: dict[str, str],
    base_dir: Path,
) -> None:
    """A run in the results store: a record of objective "run" holding its experiment
    (and any attempt an infrastructure failure ended before it)."""
    config = settings.model_dump_json()
    record_id = store.start_rating(  # two runs at the same T in the same second: -2, -3, ...
        result.experiment_id, RUN_OBJECTIVE, settings.store.name, config,
        str(base_dir.absolute()), renamed=True,
    )  # fmt: skip
    try:
        store.set_hosts(record_id, hosts, versions)
        for attempt in retried:
            store.add_experiment(record_id, "retried", attempt)
        store.add_experiment(record_id, RUN_OBJECTIVE, result)
    except (OSError, sqlite3.Error, StoreFault) as exc:  # never left "running": failed if it can
        with contextlib.suppress(OSError, sqlite3.Error, StoreFault):
            message = f"not recorded in full ({exc}): see {result.experiment_id}.json"
            store.finish_rating(record_id, "failed", None, None, None, None, message)
        raise
    message = run_failure(result.fault)
    status = "failed" if result.fault else "done"
    store.finish_rating(record_id, status, None, None, None, None, message)
