"""`bgbench study NAME`: a workload's own measurements (sdk.Study), such as the sensor-log
paper's bulk-load times and query times by selectivity.

A study runs in a worker process (`python -m bgbench.worker.study`, which makes the store's
bindings: this process never loads one), given its settings as one JSON line on stdin and
streaming JSON lines back, each bounded. It is recorded like a rating (objective
"study:NAME"): every raw measurement as the study makes it (the results store's
`measurements`), then the tables it returns as the summary. A store that fails ends it
recorded as failed (exit 3), with what it measured before kept; an interrupt kills it.
"""

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from bgbench import extras
from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.records.events import Say
from bgbench.coordinator.storage.location import ResultsURL
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import BGBenchError, SystemFault, UserError
from bgbench.sdk import AnyStudy as Study
from bgbench.sdk import StudyTable
from bgbench.workloads import registry

OBJECTIVE_PREFIX = "study:"
WORKER = [sys.executable, "-m", "bgbench.worker.study"]
LINE_LIMIT = 8 * 1024 * 1024  # bytes of one event line from the worker (its tables)
STREAM_LIMIT = 512 * 1024 * 1024  # bytes of every event line of one study


def studies_of(workload: str) -> Mapping[str, Study]:
    return cast(Mapping[str, Study], getattr(registry.get(workload), "studies", {}))


def find_study(workload: str, name: str) -> Study:
    studies = studies_of(workload)
    if name not in studies:
        known = ", ".join(sorted(studies))
        hint = f"use one of {known}" if known else f"workload {workload} has none"
        raise UserError(f"unknown study {name!r}: {hint} (bgbench study --help)")
    return studies[name]


@dataclass
class StudyRecord:
    rating_id: str
    study: str
    workload: str
    store: str
    seconds: float
    tables: list[StudyTable]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tables_of(summary: Mapping[str, Any]) -> list[StudyTable]:
    return [StudyTable(**t) for t in summary.get("tables", [])]


def run_study(
    settings: Settings,
    name: str,
    rating_id: str,
    results_dir: Path,
    say: Say,
    url: ResultsURL | None = None,
) -> StudyRecord:
    """Run study `name`, recorded in results_dir's store (or in the database `url`)."""
    workload = settings.workload.name
    find_study(workload, name)
    registry.make_options(workload, settings.store.name, dict(settings.store.options))  # exit 2
    extras.require_store(settings.store.name)  # its worker process runs here
    request = {
        "workload": workload, "study": name, "store": settings.store.name,
        "config": json.loads(settings.workload_config.model_dump_json()),
        "options": settings.store.options,
    }  # fmt: skip
    db = ResultsStore(results_dir, url)
    db.start_rating(
        rating_id, OBJECTIVE_PREFIX + name, settings.store.name, settings.model_dump_json(),
        str(Path.cwd()),
    )  # fmt: skip
    say(f"study {name} {rating_id}: results in {db.path}")

    def record(table: str, row: dict[str, Any]) -> None:
        db.add_measurement(rating_id, table, row)

    t0 = time.perf_counter()
    try:
        tables = run_worker(request, record, say)
    except (BGBenchError, KeyboardInterrupt) as exc:
        db.finish_rating(rating_id, "failed", None, None, None, None, str(exc) or "interrupted")
        raise
    result = StudyRecord(
        rating_id, name, workload, settings.store.name, time.perf_counter() - t0, tables
    )
    db.finish_rating(rating_id, "done", None, None, None, {"tables": [asdict(t) for t in tables]})
    return result


def run_worker(
    request: Mapping[str, Any],
    record: Callable[[str, dict[str, Any]], None],
    say: Callable[[str], None],
) -> list[StudyTable]:
    """Run the study in its worker process: each measurement recorded and each line said
    as it arrives; the tables it ends with. Its error is raised here as the same kind; it
    is killed if this ends first (an interrupt, a malformed stream)."""
    line = (json.dumps(request) + "\n").encode()
    # its own session: a terminal's Ctrl-C reaches this process, which kills it
    with subprocess.Popen(
        WORKER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(line)
            proc.stdin.flush()  # stdin stays open: the worker exits when it closes
            tables = _follow(_events(proc.stdout), record, say)
        except BaseException:
            proc.kill()
            raise
        finally:
            proc.stdin.close()
        code = proc.wait()
    if tables is None:
        raise SystemFault(f"the study's worker process ended (exit {code}) without its tables")
    return tables


def _events(stream: Any) -> Iterator[dict[str, Any]]:
    total = 0
    while line := stream.readline(LINE_LIMIT + 1):
        total += len(line)
        if len(line) > LINE_LIMIT or total > STREAM_LIMIT:
            raise SystemFault(
                f"the study's worker sent more than {LINE_LIMIT:,} bytes in a line or "
                f"{STREAM_LIMIT:,} in all"
            )
        try:
            event = json.loads(line)
        except ValueError:
            raise SystemFault("the study's worker sent a line that is not JSON") from None
        if not isinstance(event, dict):
            raise SystemFault("the study's worker sent a line that is not a JSON object")
        yield event


def _follow(
    events: Iterator[dict[str, Any]],
    record: Callable[[str, dict[str, Any]], None],
    say: Callable[[str], None],
) -> list[StudyTable] | None:
    for event in events:
        if "say" in event:
            say(str(event["say"]))
        elif "record" in event and isinstance(event.get("row"), dict):
            record(str(event["record"]), event["row"])
        elif "tables" in event:
            return _tables(event["tables"])
        elif "error" in event:
            kind = UserError if event["error"] == "user" else SystemFault
            raise kind(str(event.get("message", "")))
        else:
            raise SystemFault(f"the study's worker sent an unknown event {sorted(event)[:5]}")
    return None


def _tables(tables: Any) -> list[StudyTable]:
    try:
        return [StudyTable(**t) for t in tables]
    except TypeError:
        raise SystemFault("the study's worker sent tables bgbench cannot read") from None
