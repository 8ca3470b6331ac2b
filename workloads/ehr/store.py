"""The store seam of the EHR workload: what a binding implements, declared as Protocols.

A binding is small: schema and load hooks plus the two operations of paper section 3.4.
It never times itself (the SDK's timer does) and never retries. One binding per file
under `stores/`, registered as an entry point of the group `bgbench.ehr_stores`.

The operations, on one connection per socialite loop:

- `recent_results(patient, k) -> (rows, count)`: the patient's `k` most recent lab results,
  newest first (effective time descending, then id descending), AND the number of lab
  results of that patient visible to this same read. The count is the tracked item the
  validator checks (workload.py says why), so it must come from the same snapshot or
  query as the rows: one SQL statement or transaction, one partition read at the
  operation's consistency level, one document fetch. A count kept apart from the rows (a
  counter column, a second read at another consistency level) would let the rows be stale
  while the count is not, and the validator would no longer see what a clinician saw.
- `insert_result(row)`: insert one new lab result; it raises if the store did not take it.
  `row.id` is unique (the workload hands out keys that never collide across fragments),
  so an insert that finds its key taken is an error, never an overwrite.

A binding with an asynchronous driver declares `concurrency = "asyncio"` and gives each
socialite an `AsyncEHRConnection` from `connect_async` (on the load process's event loop);
a blocking one (`"threads"`) gives each socialite thread an `EHRConnection` from
`connect`, which the workload views as an `AsyncEHRConnection` through
`sdk.connection_for`. Schema, load and read-back stay blocking for every binding.
"""

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, ClassVar, Literal, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    import numpy as np

    from bgbench.workloads.ehr.config import EHRDatabaseConfig

ENTRY_POINT_GROUP = "bgbench.ehr_stores"

Concurrency = Literal["threads", "asyncio"]


class Patient(NamedTuple):
    """A FHIR Patient, reduced to what the paper's prototype stored."""

    id: int
    family: str
    given: str
    address: str
    telephone: str
    birth_date: str  # ISO 8601 date


class LabResult(NamedTuple):
    """A FHIR Observation of a laboratory test."""

    id: int  # the result's key: unique across the database
    patient: int
    code: str  # the test, as a LOINC code
    value: float  # the quantity
    unit: str
    effective_ms: int  # when the observation was made: ms since the Unix epoch


class FragmentRows(Protocol):
    """What `load_fragment` and `read_back` get: one fragment's patients and generated rows
    (generator.FragmentData). Rows are generated as they are iterated, batch by batch."""

    index: int
    patients: "np.ndarray"  # the fragment's patient ids, ascending (int64)

    def patient_batches(self) -> Iterator[list[Patient]]: ...
    def result_batches(self) -> Iterator[list[LabResult]]: ...


@runtime_checkable
class EHRConnection(Protocol):
    """One socialite thread's handle on the store. Calls may raise; they are never retried."""

    def recent_results(self, patient: int, k: int) -> tuple[list[LabResult], int]: ...
    def insert_result(self, row: LabResult) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class AsyncEHRConnection(Protocol):
    """One socialite task's handle on the store, on the load process's event loop."""

    async def recent_results(self, patient: int, k: int) -> tuple[list[LabResult], int]: ...
    async def insert_result(self, row: LabResult) -> None: ...
    async def close(self) -> None: ...


class EHRBinding(Protocol):
    """A store for the EHR workload. Constructed once per load process with its options."""

    name: ClassVar[str]
    # "asyncio": socialites are tasks on one event loop per load process (connect_async);
    # "threads": one OS thread per socialite (connect), for drivers that only block.
    concurrency: ClassVar[Concurrency]
    # False when the store's calls return without ever suspending the task.
    suspends: ClassVar[bool]
    # True when the store runs inside the load process (SQLite): its CPU is the client's.
    embedded: ClassVar[bool]
    # True when read_back() can count every patient's results in the quiescent store.
    can_read_back: ClassVar[bool]
    Options: ClassVar[type[BaseModel]]
    # The options that name files (SQLite's "path"): a remote agent keeps them in its
    # work dir.
    file_options: ClassVar[tuple[str, ...]]

    def create_schema(self, db: "EHRDatabaseConfig") -> None:
        """Create the tables (DDL), then as use_schema; drop the rows of patients beyond
        `db.patients` (left by a larger database earlier: their keys could collide with new
        ones). Runs once per database, in one load process, before any fragment loads."""
        ...

    def use_schema(self, db: "EHRDatabaseConfig") -> None:
        """Ready this binding for a schema another process created: no DDL that could
        conflict with a load. Every other load process calls this instead."""
        ...

    def load_fragment(self, fragment: FragmentRows, progress: Callable[[], None]) -> None:
        """Replace the rows of the fragment's patients (and every lab result of theirs, those
        runs inserted too) with the generated ones, calling `progress` at least once per
        batch. Load processes call it at the same time, each for its own fragment."""
        ...

    def read_back(self, fragment: FragmentRows, progress: Callable[[], None]) -> dict[int, int]:
        """Lab results per patient of the fragment as the quiescent store holds them
        (patients with none may be left out)."""
        ...

    def connect(self) -> EHRConnection:
        """A blocking connection (concurrency "threads")."""
        ...

    async def connect_async(self) -> AsyncEHRConnection:
        """A connection on the running event loop (concurrency "asyncio"). Tests may call
        it from several loops: keep loop-bound resources (pools) per loop."""
        ...

    async def aclose(self) -> None:
        """Release what connect_async made on the running loop, before it closes."""
        ...

    def describe(self) -> str:
        """The server this binding talks to (name and version), for results."""
        ...

    def counters(self) -> dict[str, int]:
        """The binding's own counts, for results ({} for none)."""
        ...

    def close(self) -> None: ...
