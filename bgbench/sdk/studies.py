"""Studies: a workload's own measurements beyond ratings (bulk-load times, query times by
selectivity), run by `bgbench study NAME --workload W` in a worker process (bgbench.worker.
study) against the bindings of one store that the caller makes for it."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

ConfigT = TypeVar("ConfigT", bound=BaseModel, contravariant=True)
BindingT = TypeVar("BindingT", contravariant=True)


@dataclass
class StudyTable:
    """One table a study reports: rows of named columns (numbers, strings)."""

    name: str  # short, for files and JSON (load, queries)
    title: str
    columns: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


Record = Callable[[str, dict[str, Any]], None]  # (table name, row), recorded at once
Say = Callable[[str], None]  # a line of progress for the user
# A new binding of the study's store, from the user's store options with these overrides
# (e.g. {"consistency": "weak"}); the study closes each binding it makes.
Bindings = Callable[[Mapping[str, Any]], BindingT]


class Study(Protocol[ConfigT, BindingT]):
    """A measurement a workload's paper made that is not a rating. It records each
    measurement as it is made (nothing is lost to a fault) and returns the tables."""

    name: str
    description: str

    def run(
        self, config: ConfigT, bindings: Bindings[BindingT], record: Record, say: Say
    ) -> list[StudyTable]:
        """Measure through bindings made by `bindings`, calling `record` with every raw
        measurement as it is made; the tables to show (summaries first). A store that
        fails raises SystemFault (StoreError)."""
        ...


AnyStudy = Study[Any, Any]  # what the registry and the study runner hold


class WithStudies(Protocol):
    """A workload that has studies (optional: a workload without has none)."""

    studies: Mapping[str, Study[Any, Any]]
