"""MongoDB (pymongo) for the sensor-log workload, as the paper's section 2.6.1 set it up.

    measures {_id, m, s, bt, et, mv}      (short field names: they are stored in every document)
    measures_key UNIQUE (m, s, bt)        measures_mv (mv)

"Indexes before" creates both on the empty collection, "after" builds them on the loaded
one (build_indexes). The bulk path is insert_many(ordered=False), one call per chunk of
at most CHUNK documents of a machine's batch.

Consistency (the paper's Table 1: Mongo-S and Mongo):

    strong  acknowledged, journaled writes (w 1, j true)
    weak    unacknowledged writes (w 0)

With w 0 the client does not wait for the server, so bulk_load and load_fragment would
return while the server still has rows to insert. Both therefore end by asking, on the
same single-connection client, for an acknowledged count of the rows they sent: MongoDB
(and SecantusDB) handle one connection's messages in order, so that count runs after
every insert sent before it. If the count falls short (an unacknowledged insert fails
silently, a duplicate key for instance), it is asked again until `load_timeout_s` has
passed, then the load fails saying how many rows the server holds. The weak load time
therefore includes the server's work on every row plus one count (of the fragment's
machines, or the collection's size when the study loads it whole). A client that dies
mid-load leaves the server inserting what it had already sent: the next reset may race
with those rows (the count then says so).

The rating's socialite inserts are single documents the validator counts as committed
once they return, which an unacknowledged write cannot promise: they are acknowledged
under both settings (w 1), journaled only under strong. Schema commands and the
fragment's delete are always acknowledged.

Q1 is find_one on the key; Q2 fetches every document with mv > x (the paper's
find({mv: {$gt: x}})); Q3 and the rating's count_above are one aggregate command each,
$match then $group {n: $sum 1} (what pymongo's count_documents sends), so the count is
that of one read. count_above matches mv > x, then the machine range in a second $match:
MongoDB merges adjacent $match stages into one filter, while SecantusDB 0.7 answers the
merged filter by a collection scan (about 50 times slower on 20,000 rows) and the two stages
by measures_mv. `plan` is the explain command's winning plan, leaf first
("IXSCAN measures_mv -> FETCH"), or the reason a server cannot explain.

Socialites are tasks on the load process's event loop, over one AsyncMongoClient per loop
(as the EHR binding); the studies, schema and loading use the blocking MongoClient.
Results name the server (`server_name`): MongoDB-wire servers such as SecantusDB report
a MongoDB version of their own.
"""

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as Pending
from contextlib import contextmanager
from typing import Any, ClassVar

import pymongo
from pydantic import BaseModel
from pymongo import WriteConcern
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.collection import Collection
from pymongo.errors import (
    ConnectionFailure,
    OperationFailure,
    PyMongoError,
    ServerSelectionTimeoutError,
)

from bgbench.drivers import mongodb as mongo
from bgbench.drivers.mongodb import PerLoop, brief, where
from bgbench.errors import StoreError
from bgbench.workloads.loading import ROWS_PER_BEAT
from bgbench.workloads.sensorlog.config import SensorLogDatabaseConfig
from bgbench.workloads.sensorlog.generator import Rows
from bgbench.workloads.sensorlog.store import Concurrency, FragmentLog, Query, Reading
from bgbench.workloads.sensorlog.stores.options import MongoSensorOptions

Document = dict[str, Any]
COLLECTION = "measures"
KEY_INDEX = pymongo.IndexModel(
    [("m", 1), ("s", 1), ("bt", 1)], name="measures_key", unique=True
)  # fmt: skip
MV_INDEX = pymongo.IndexModel([("mv", 1)], name="measures_mv")
INDEXES = [KEY_INDEX, MV_INDEX]
COUNT = {"$group": {"_id": 1, "n": {"$sum": 1}}}
CHUNK = ROWS_PER_BEAT  # documents per insert_many: one beat each
RECOUNT_PAUSE_S = 0.05
BEAT_S = 1.0  # beats while a weak load's count waits for the server
NO_ID = {"_id": 0}
CONSISTENCY_SETTINGS = {
    "strong": "acknowledged, journaled writes: w=1, j=true (Mongo-S)",
    "weak": "unacknowledged writes: w=0, a load ends on an acknowledged count (Mongo); "
    "rating inserts w=1, j=false",
}


def _document(m: int, s: int, bt: int, et: int, mv: float) -> Document:
    return {"m": m, "s": s, "bt": bt, "et": et, "mv": mv}


def _documents(rows: Rows) -> Iterator[list[Document]]:
    for lo in range(0, len(rows), CHUNK):
        cols = (c[lo : lo + CHUNK].tolist() for c in rows)
        yield [_document(*r) for r in zip(*cols, strict=True)]


def _beating(call: Callable[[], int], progress: Callable[[], None]) -> int:
    """call() in a helper thread, beating in this one until it answers (a fragment's
    delete; the count that ends a weak load waits for every insert sent before it)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="mongodb-count")
    try:
        future = pool.submit(call)
        while True:
            try:
                return future.result(timeout=BEAT_S)
            except Pending:
                progress()
    finally:
        pool.shutdown(wait=False)


def _machines(lo: int, hi: int) -> Document:
    return {"m": {"$gte": lo, "$lt": hi}}


def _above(x: float) -> Document:
    return {"mv": {"$gt": x}}


def _count_pipeline(*matches: Document) -> list[Document]:
    return [*({"$match": q} for q in matches), COUNT]


def _counted(docs: list[Document]) -> int:
    # $group gives no document when nothing matched
    return int(docs[0]["n"]) if docs else 0


def _stages(stage: Document) -> str:
    """A plan stage and its inputs, leaf first: "IXSCAN measures_mv -> FETCH"."""
    name = str(stage.get("stage", "?"))
    if stage.get("indexName"):
        name += f" {stage['indexName']}"
    inputs = stage.get("inputStages") or ([stage["inputStage"]] if "inputStage" in stage else [])
    if not inputs:
        return name
    if len(inputs) == 1:
        return f"{_stages(inputs[0])} -> {name}"
    return f"({' | '.join(_stages(i) for i in inputs)}) -> {name}"


def _find_key(doc: Any, key: str) -> Any:
    """The first value under `key` anywhere in an explain document."""
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        children: Iterable[Any] = doc.values()
    elif isinstance(doc, list):
        children = doc
    else:
        return None
    for child in children:
        found = _find_key(child, key)
        if found is not None:
            return found
    return None


def explained(answer: Document) -> str:
    """The winning plan of an explain answer as one line, with an aggregate's later stages."""
    winning = _find_key(answer, "winningPlan")
    if not isinstance(winning, dict):
        return "no winning plan in the explain answer"
    plan = _stages(winning.get("queryPlan", winning))  # slot-based engine: nested once more
    applied = _find_key(answer, "parsedQuery")
    later = [
        name
        for stage in answer.get("stages", [])[1:]  # after the $cursor the winning plan feeds
        for name, body in stage.items()
        if not (name == "$match" and body == applied)  # what the cursor already applied
    ]
    return " -> ".join([plan, *later])


class MongoSensorBinding:
    name: ClassVar[str] = "mongodb"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    Options: ClassVar[type[BaseModel]] = MongoSensorOptions
    file_options: ClassVar[tuple[str, ...]] = ()
    consistency_settings: ClassVar[dict[str, str]] = CONSISTENCY_SETTINGS

    def __init__(self, options: MongoSensorOptions) -> None:
        self.options = options
        self.strong = options.consistency == "strong"
        # One connection: the acknowledged count that ends a weak load travels behind
        # the unacknowledged inserts on the same socket, so the server runs it after them.
        self.client: pymongo.MongoClient[Document] = mongo.client(
            options,
            # long: a weak load's count answers only after every insert queued ahead of it
            socketTimeoutMS=options.load_timeout_s * 1000,
            maxPoolSize=1,
        )
        acked = WriteConcern(w=1, j=True if self.strong else None)
        db = self.client.get_database(options.database, write_concern=acked)
        self.db = db
        self.measures: Collection[Document] = db[COLLECTION]
        self.bulk: Collection[Document] = (
            self.measures
            if self.strong
            else self.measures.with_options(write_concern=WriteConcern(w=0))
        )
        self.ready = False
        # AsyncMongoClient binds itself to the loop it first runs on: one per loop.
        self.loop_clients = PerLoop(self._loop_client)

    def _loop_client(self) -> tuple[Any, AsyncCollection[Document]]:
        client = mongo.async_client(self.options)
        # Acknowledged under both settings: a returned insert must be a committed one.
        concern = WriteConcern(w=1, j=True if self.strong else None)
        db = client.get_database(self.options.database, write_concern=concern)
        return client, db[COLLECTION]

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        o = self.options
        try:
            yield
        except PyMongoError as exc:
            first = brief(exc)  # the topology of a selection timeout is no help on one line
            at = f"{o.server_name} at {where(o.uri)}"
            if isinstance(exc, ServerSelectionTimeoutError) or (
                isinstance(exc, ConnectionFailure) and not exc.timeout
            ):
                raise StoreError(f"cannot reach {at}: {first}") from None
            if exc.timeout:
                raise StoreError(
                    f"{at} did not answer within {o.load_timeout_s:g} s "
                    f"(store.options.load_timeout_s) to {what}"
                ) from None
            raise StoreError(f"{at} failed to {what}: {first}") from None

    def _send(
        self, batches: Iterable[Rows], progress: Callable[[], None], held: Callable[[], int]
    ) -> int:
        """Insert every row by the bulk path; under w 0, return only once `held()` (an
        acknowledged count of what this load sent) reaches the rows sent."""
        sent = 0
        for rows in batches:
            progress()
            for docs in _documents(rows):
                self.bulk.insert_many(docs, ordered=False)
                sent += len(docs)
                progress()
        if self.strong:
            return sent
        o = self.options
        deadline = time.monotonic() + o.load_timeout_s
        while (have := _beating(held, progress)) != sent:
            progress()
            if time.monotonic() > deadline:
                raise StoreError(
                    f"{o.server_name} holds {have:,} of the {sent:,} rows sent unacknowledged "
                    f"(w=0) {o.load_timeout_s:g} s after the last (store.options.load_timeout_s)"
                )
            time.sleep(RECOUNT_PAUSE_S)
        return sent

    # -- studies ---------------------------------------------------------------------
    def reset(self, indexes: bool) -> None:
        with self._errors("recreate the measures collection"):
            self.db.drop_collection(COLLECTION)
            self.db.create_collection(COLLECTION)
            if indexes:
                self.measures.create_indexes(INDEXES)

    def bulk_load(self, batches: Iterable[Rows], progress: Callable[[], None]) -> int:
        with self._errors("bulk-load measures"):
            before = self.measures.estimated_document_count()
            return self._send(
                batches, progress, lambda: self.measures.estimated_document_count() - before
            )

    def build_indexes(self) -> None:
        with self._errors("build the measures indexes"):
            self.measures.create_indexes(INDEXES)

    def q1(self, m: int, s: int, bt: int) -> Reading | None:
        with self._errors("look up a reading"):
            d = self.measures.find_one({"m": m, "s": s, "bt": bt}, NO_ID)
        return Reading(d["m"], d["s"], d["bt"], d["et"], d["mv"]) if d else None

    def q2(self, x: float) -> int:
        with self._errors("fetch readings above a threshold"):
            return sum(1 for _ in self.measures.find(_above(x)))

    def q3(self, x: float) -> int:
        with self._errors("count readings above a threshold"):
            return _counted(list(self.measures.aggregate(_count_pipeline(_above(x)))))

    def plan(self, query: Query, x: float = 0.0, key: tuple[int, int, int] = (0, 0, 0)) -> str:
        m, s, bt = key
        commands: dict[str, Document] = {
            "Q1": {"find": COLLECTION, "filter": {"m": m, "s": s, "bt": bt}, "limit": 1},
            "Q2": {"find": COLLECTION, "filter": _above(x)},
            "Q3": {"aggregate": COLLECTION, "pipeline": _count_pipeline(_above(x)), "cursor": {}},
        }
        with self._errors(f"explain {query}"):
            try:
                answer = self.db.command("explain", commands[query], verbosity="queryPlanner")
            except OperationFailure as exc:
                first = str(exc).splitlines()[0]
                return f"explain not supported by {self.options.server_name}: {first}"
        return explained(answer)

    # -- the rating ------------------------------------------------------------------
    def create_schema(self, db: SensorLogDatabaseConfig) -> None:
        with self._errors("create the measures indexes"):
            self.measures.create_indexes(INDEXES)  # a no-op for indexes already there
        self.ready = True

    def use_schema(self, db: SensorLogDatabaseConfig) -> None:
        with self._errors("answer a ping"):
            self.client.admin.command("ping")
        self.ready = True

    def load_fragment(self, fragment: FragmentLog, progress: Callable[[], None]) -> None:
        machines = _machines(fragment.machines.start, fragment.machines.stop)
        with self._errors(f"load fragment {fragment.index}"):
            _beating(lambda: self.measures.delete_many(machines).deleted_count, progress)
            self._send(
                fragment.batches(), progress, lambda: self.measures.count_documents(machines)
            )

    def connect(self) -> "MongoSensorConnection":
        raise NotImplementedError("the MongoDB binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "MongoSensorConnection":
        if not self.ready:
            raise StoreError("create_schema or use_schema must run before connect")
        return MongoSensorConnection(self.loop_clients.get_or_make()[1])

    async def aclose(self) -> None:
        entry = self.loop_clients.pop()
        if entry is not None:
            await entry[0].close()

    def describe(self) -> str:
        o = self.options
        with self._errors("report its version"):
            version = mongo.server_version(self.client)
        return (
            f"{o.server_name} (reports MongoDB {version}; {o.consistency}: "
            f"{self.consistency_settings[o.consistency]})"
        )

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.loop_clients.clear()  # a loop's client is closed by aclose() on that loop
        self.client.close()


class MongoSensorConnection:
    """One socialite task's commands, over its loop's shared client."""

    __slots__ = ("measures",)

    def __init__(self, measures: AsyncCollection[Document]) -> None:
        self.measures = measures

    async def insert(self, row: Reading) -> None:
        await self.measures.insert_one(_document(*row))

    async def newest(self, m: int, s: int, bt: int) -> bool:
        return await self.measures.find_one({"m": m, "s": s, "bt": bt}, {"_id": 1}) is not None

    async def count_above(self, x: float, m_lo: int, m_hi: int) -> int:
        cursor = await self.measures.aggregate(_count_pipeline(_above(x), _machines(m_lo, m_hi)))
        return _counted(await cursor.to_list())

    async def close(self) -> None:
        pass  # the loop's client is shared; the binding's aclose() closes it
