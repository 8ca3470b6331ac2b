"""MongoDB (pymongo) for the EHR workload: a patients collection and a results collection.

    patients {_id: patient, family, given, address, telephone, birth_date}
    results  {_id: result key, patient, code, value, unit, effective_ms}
             index (patient, effective_ms -1, _id -1)

Results are documents of their own, keyed by the result's key, rather than an array in
the patient's document: the paper's writes inserted a new record under an increasing key,
which is what put every insert on one shard of MongoDB's range sharding; keyed so, the
`hashed_keys` setting decides where a sharded cluster's inserts go, as in the paper. A
taken key fails the insert (DuplicateKeyError on _id).

A READ is one aggregate command: $match the patient's results through the index, then
$facet hands every matched document to both the k newest (sort, limit) and the count. Both
come from the one stream of documents the command read, so the count is that of the rows'
read (results are only ever inserted, so no document a write committed before the read
began can escape the scan; one inserted meanwhile is in both answers or in neither).

Consistency (`consistency`, after the paper's Tables 1 and 2; each part may be set alone):

    strong    writes acknowledged by the primary (w 1), reads primaryPreferred (Table 1)
    majority  writes acknowledged by a majority, journaled; reads from the primary
    eventual  w 1, reads from the nearest member (the paper's Table 2 has no MongoDB row)

Socialites are tasks on the load process's event loop, over one AsyncMongoClient per loop;
schema, loading, read-back and describe use the blocking MongoClient. Results name the
server (`server_name`): MongoDB-wire servers such as SecantusDB report a MongoDB version.
"""

from collections.abc import Callable
from typing import Any, ClassVar

import pymongo
from pydantic import BaseModel
from pymongo.asynchronous.collection import AsyncCollection

from bgbench.drivers import mongodb as mongo
from bgbench.drivers.mongodb import PerLoop, PyMongoError
from bgbench.errors import StoreError
from bgbench.workloads.ehr.config import EHRDatabaseConfig
from bgbench.workloads.ehr.store import Concurrency, FragmentRows, LabResult
from bgbench.workloads.ehr.stores.options import MongoEHROptions

Document = dict[str, Any]
IDS_PER_BEAT = 1000
NEWEST_FIRST = {"effective_ms": -1, "_id": -1}
RECENT_INDEX = [("patient", 1), ("effective_ms", -1), ("_id", -1)]


def _database_options(o: MongoEHROptions) -> dict[str, Any]:
    w, j, read = o.settings()
    return mongo.concern(w, j, read)


def recent_pipeline(patient: int, k: int) -> list[dict[str, Any]]:
    return [
        {"$match": {"patient": patient}},
        {"$facet": {"rows": [{"$sort": NEWEST_FIRST}, {"$limit": k}], "count": [{"$count": "n"}]}},
    ]


def _answer(docs: list[dict[str, Any]]) -> tuple[list[LabResult], int]:
    if not docs:
        return [], 0
    facets = docs[0]
    rows = [
        LabResult(d["_id"], d["patient"], d["code"], d["value"], d["unit"], d["effective_ms"])
        for d in facets["rows"]
    ]
    # MongoDB's $count gives no document for no input; some wire servers give n = 0
    count = facets["count"][0]["n"] if facets["count"] else 0
    return rows, int(count)


def _document(row: LabResult) -> dict[str, Any]:
    return {"_id": row.id, "patient": row.patient, "code": row.code, "value": row.value,
            "unit": row.unit, "effective_ms": row.effective_ms}  # fmt: skip


class _LoopDatabase:
    """One event loop's client and the results collection its connections share."""

    __slots__ = ("client", "results")

    def __init__(self, options: MongoEHROptions) -> None:
        self.client = mongo.async_client(options)
        db = self.client.get_database(options.database, **_database_options(options))
        self.results: AsyncCollection[Document] = db.results


class MongoEHRBinding:
    name: ClassVar[str] = "mongodb"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = MongoEHROptions
    file_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: MongoEHROptions) -> None:
        self.options = options
        self.client: pymongo.MongoClient[Document] = mongo.client(options)
        self.db = self.client.get_database(options.database, **_database_options(options))
        self.ready = False
        # AsyncMongoClient binds itself to the loop it first runs on: one per loop.
        self.loop_dbs = PerLoop(lambda: _LoopDatabase(options))

    def _unreachable(self, exc: PyMongoError) -> StoreError:
        return mongo.unreachable(self.options, exc)

    # -- schema and load -------------------------------------------------------------------
    def create_schema(self, db: EHRDatabaseConfig) -> None:
        try:
            self.db.results.create_index(RECENT_INDEX, name="results_recent")
            # A larger database loaded here before left patients whose results hold keys
            # this one's inserts will take.
            self.db.results.delete_many({"patient": {"$gte": db.patients}})
            self.db.patients.delete_many({"_id": {"$gte": db.patients}})
        except PyMongoError as exc:
            raise self._unreachable(exc) from None
        self.ready = True

    def use_schema(self, db: EHRDatabaseConfig) -> None:
        try:
            self.client.admin.command("ping")
        except PyMongoError as exc:
            raise self._unreachable(exc) from None
        self.ready = True

    def load_fragment(self, fragment: FragmentRows, progress: Callable[[], None]) -> None:
        patients, results = self.db.patients, self.db.results
        # Every old row of the fragment's patients goes before any new one comes in.
        for patient_rows in fragment.patient_batches():
            progress()
            ids = [p.id for p in patient_rows]
            results.delete_many({"patient": {"$in": ids}})
            patients.delete_many({"_id": {"$in": ids}})
            patients.insert_many(
                [{"_id": p.id, "family": p.family, "given": p.given, "address": p.address,
                  "telephone": p.telephone, "birth_date": p.birth_date}
                 for p in patient_rows],
                ordered=False,
            )  # fmt: skip
        for result_rows in fragment.result_batches():
            progress()
            results.insert_many([_document(r) for r in result_rows], ordered=False)

    def read_back(self, fragment: FragmentRows, progress: Callable[[], None]) -> dict[int, int]:
        ids = fragment.patients.tolist()
        counts: dict[int, int] = {}
        for lo in range(0, len(ids), IDS_PER_BEAT):
            progress()
            for doc in self.db.results.aggregate(
                [
                    {"$match": {"patient": {"$in": ids[lo : lo + IDS_PER_BEAT]}}},
                    {"$group": {"_id": "$patient", "n": {"$sum": 1}}},
                ]
            ):
                counts[int(doc["_id"])] = int(doc["n"])
        return counts

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> "MongoEHRConnection":
        raise NotImplementedError("the MongoDB binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "MongoEHRConnection":
        if not self.ready:
            raise StoreError("create_schema or use_schema must run before connect")
        return MongoEHRConnection(self.loop_dbs.get_or_make().results)

    async def aclose(self) -> None:
        db = self.loop_dbs.pop()
        if db is not None:
            await db.client.close()

    def describe(self) -> str:
        version = mongo.server_version(self.client)
        w, j, read = self.options.settings()
        return (
            f"{self.options.server_name} (reports MongoDB {version}; {self.options.consistency}: "
            f"w={w}, j={str(j).lower()}, reads {read})"
        )

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.loop_dbs.clear()  # a loop's client is closed by aclose() on that loop
        self.client.close()


class MongoEHRConnection:
    """One socialite task's commands, over its loop's shared client."""

    __slots__ = ("results",)

    def __init__(self, results: AsyncCollection[Document]) -> None:
        self.results = results

    async def recent_results(self, patient: int, k: int) -> tuple[list[LabResult], int]:
        cursor = await self.results.aggregate(recent_pipeline(patient, k))
        return _answer(await cursor.to_list())

    async def insert_result(self, row: LabResult) -> None:
        await self.results.insert_one(_document(row))

    async def close(self) -> None:
        pass  # the loop's client is shared; the binding's aclose() closes it
