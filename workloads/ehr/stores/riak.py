"""Riak KV over its HTTP API (httpx) for the EHR workload: one JSON document per patient,
holding the patient's lab results newest first.

    {prefix}patients/<id>   {"family", "given", "address", "telephone", "birth_date",
                             "results": [[id, code, value, unit, effective_ms], ...]}

A key-value store answers "the 5 most recent" only from a value it fetches whole, so a
patient's results live in its document: a READ is one GET at the read quorum, and its
rows (the first k) and its count (the list's length) are one value. A WRITE is a
read-modify-write: GET the document and its X-Riak-Vclock, refuse a key the patient's
results already hold, put the result in its place, PUT with the vclock. Buckets have
allow_mult false, so concurrent writers to one patient resolve by last write wins (a lost
insert is a real Riak outcome, and the validator counts it); `exclusive` (the workload's
default) keeps two loops off one patient. A result's key is checked within its patient
only, as the document is all the store can see at once.

Calls, quorum options and presets are BG's binding's (workloads/bg/stores/riak.py): the
`consistency` preset after the paper's Tables 1 and 2, "quorum" (r, w, pr, pw at quorum;
notfound_ok false) or "noquorum" (r, w at 1; pr, pw at 0; notfound_ok true), each option
settable alone. Not yet run against a real Riak: none can be installed on these machines.
The tests run it against an emulator of these calls (tests/riak_emulator.py, named so in
`server_name`), or a real Riak when BGBENCH_RIAK_URL is set.

Socialites are tasks on the load process's event loop, over one httpx.AsyncClient per
loop; loading, schema and read-back use the blocking client.
"""

import itertools
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from bgbench.drivers.riak import AsyncRiak, PerLoop, Riak
from bgbench.drivers.riak_options import RiakOptions
from bgbench.errors import StoreError
from bgbench.workloads.ehr.config import EHRDatabaseConfig
from bgbench.workloads.ehr.store import Concurrency, FragmentRows, LabResult, Patient
from bgbench.workloads.ehr.stores.options import RiakEHROptions

BUCKET = "patients"


def patients_with_results(
    fragment: FragmentRows,
) -> Iterator[list[tuple[Patient, list[LabResult]]]]:
    """The fragment's patients, batch by batch, each with its generated results (both
    streams come in ascending patient order)."""
    results = itertools.chain.from_iterable(fragment.result_batches())
    pending = next(results, None)
    for batch in fragment.patient_batches():
        out = []
        for p in batch:
            mine = []
            while pending is not None and pending.patient == p.id:
                mine.append(pending)
                pending = next(results, None)
            out.append((p, mine))
        yield out
    if pending is not None:
        raise ValueError(f"result {pending.id} of patient {pending.patient} outside the fragment")


def _newest_first(item: list[Any]) -> tuple[int, int]:
    return item[4], item[0]


def _document(patient: Patient, results: list[LabResult]) -> dict[str, Any]:
    rows = [[r.id, r.code, r.value, r.unit, r.effective_ms] for r in results]
    rows.sort(key=_newest_first, reverse=True)
    return {"family": patient.family, "given": patient.given, "address": patient.address,
            "telephone": patient.telephone, "birth_date": patient.birth_date,
            "results": rows}  # fmt: skip


def _answer(patient: int, doc: dict[str, Any] | None, k: int) -> tuple[list[LabResult], int]:
    if doc is None:
        return [], 0
    rows = doc["results"]
    return [LabResult(rid, patient, code, value, unit, when)
            for rid, code, value, unit, when in rows[:k]], len(rows)  # fmt: skip


def _with(doc: dict[str, Any] | None, row: LabResult) -> dict[str, Any]:
    """The patient's document with one result more; raises if it cannot take it."""
    if doc is None:
        raise StoreError(f"patient {row.patient} not found")
    rows: list[list[Any]] = doc["results"]
    if any(r[0] == row.id for r in rows):
        raise StoreError(f"result {row.id} of patient {row.patient}: key taken")
    rows.append([row.id, row.code, row.value, row.unit, row.effective_ms])
    rows.sort(key=_newest_first, reverse=True)  # a new result is usually newest: one pass
    return doc


class RiakEHRBinding:
    name: ClassVar[str] = "riak"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[RiakOptions]] = RiakEHROptions
    file_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: RiakEHROptions) -> None:
        self.options = options
        self.riak = Riak(options)
        self.ready = False
        # an httpx.AsyncClient's connections belong to the loop they were opened on
        self.loop_riaks = PerLoop(lambda: AsyncRiak(options, (BUCKET,)))

    # -- schema and load -------------------------------------------------------------------
    def create_schema(self, db: EHRDatabaseConfig) -> None:
        """Patients beyond `db.patients` left by a larger database stay: their results' keys
        are checked within their own documents, which no READ or WRITE reaches."""
        self.riak.make_buckets((BUCKET,))
        self.ready = True

    def use_schema(self, db: EHRDatabaseConfig) -> None:
        self.riak.ping()
        self.ready = True

    def load_fragment(self, fragment: FragmentRows, progress: Callable[[], None]) -> None:
        # Plain overwrites (no vclock): each replaces the patient's document and every
        # result runs put in it.
        for batch in patients_with_results(fragment):
            for patient, results in batch:
                progress()
                self.riak.put(BUCKET, str(patient.id), _document(patient, results))

    def read_back(self, fragment: FragmentRows, progress: Callable[[], None]) -> dict[int, int]:
        counts: dict[int, int] = {}
        for p in fragment.patients.tolist():
            progress()
            doc, _ = self.riak.get(BUCKET, str(p))
            if doc is None:
                raise StoreError(f"patient {p} not found")
            if doc["results"]:
                counts[p] = len(doc["results"])
        return counts

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> "RiakEHRConnection":
        raise NotImplementedError("the Riak binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "RiakEHRConnection":
        if not self.ready:
            raise StoreError("create_schema or use_schema must run before connect")
        return RiakEHRConnection(self.loop_riaks.get_or_make())

    async def aclose(self) -> None:
        riak = self.loop_riaks.pop()
        if riak is not None:
            await riak.aclose()

    def describe(self) -> str:
        return self.options.describe()

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.loop_riaks.clear()  # a loop's client is closed by aclose() on that loop
        self.riak.close()


class RiakEHRConnection:
    """One socialite task's GETs and read-modify-writes over its loop's shared client."""

    __slots__ = ("riak",)

    def __init__(self, riak: AsyncRiak) -> None:
        self.riak = riak

    async def recent_results(self, patient: int, k: int) -> tuple[list[LabResult], int]:
        doc, _ = await self.riak.get(BUCKET, str(patient))
        return _answer(patient, doc, k)

    async def insert_result(self, row: LabResult) -> None:
        doc, vclock = await self.riak.get(BUCKET, str(row.patient))
        await self.riak.put(BUCKET, str(row.patient), _with(doc, row), vclock)

    async def close(self) -> None:
        pass  # the loop's client is shared; the binding's aclose() closes it
