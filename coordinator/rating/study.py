"""`bgbench study NAME`: a workload's own measurements (workloads/api.Study), such as the
sensor-log paper's bulk-load times and query times by selectivity.

A study runs in this process against one store binding made from the settings. It is
recorded like a rating (objective "study:NAME"): every raw measurement as the study makes
it (the results store's `measurements`), then the tables it returns as the summary. A
store that fails ends it recorded as failed (exit 3), with what it measured before kept.
"""

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.records.events import Say
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import BGBenchError, UserError
from bgbench.sdk import AnyStudy as Study
from bgbench.sdk import StudyTable
from bgbench.workloads import registry

OBJECTIVE_PREFIX = "study:"


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
    settings: Settings, name: str, rating_id: str, results_dir: Path, say: Say
) -> StudyRecord:
    workload = settings.workload.name
    study = find_study(workload, name)
    config = settings.workload_config
    binding_options = dict(settings.store.options)
    registry.make_options(workload, settings.store.name, binding_options)  # bad options: exit 2
    db = ResultsStore(results_dir)
    db.start_rating(
        rating_id, OBJECTIVE_PREFIX + name, settings.store.name, settings.model_dump_json(),
        str(Path.cwd()),
    )  # fmt: skip
    say(f"study {name} {rating_id}: results in {db.path}")

    def record(table: str, row: dict[str, Any]) -> None:
        db.add_measurement(rating_id, table, row)

    t0 = time.perf_counter()
    try:
        tables = study.run(config, settings.store.name, binding_options, record, say)
    except (BGBenchError, KeyboardInterrupt) as exc:
        db.finish_rating(rating_id, "failed", None, None, None, None, str(exc) or "interrupted")
        raise
    result = StudyRecord(
        rating_id, name, workload, settings.store.name, time.perf_counter() - t0, tables
    )
    db.finish_rating(rating_id, "done", None, None, None, {"tables": [asdict(t) for t in tables]})
    return result
