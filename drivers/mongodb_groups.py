"""Entity groups on MongoDB and MongoDB-wire servers (drivers/groups.py): one document
per group.

    {collection}   {_id: group key, v: version, e: {entry key: bytes}}

A commit is one single-document update filtered on the version, Strudel's MongoDB
implementation: update_one({_id, v: version}, {$set e.<key>, $unset e.<key>, $inc v})
applies atomically or matches nothing (another commit moved the version: a conflict).
Version 0 is insert_one: a duplicate _id means another transaction created the group
first. Entry keys are field names: no ".", no leading "$" (ValueError).

Socialites are tasks over one AsyncMongoClient per event loop; schema, loading and
read-back use the blocking client. SecantusDB (the MongoDB-wire server the tests run)
supports every operation used here.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pymongo
from pymongo import ReplaceOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from bgbench.drivers import mongodb as mongo
from bgbench.drivers.groups import GroupData
from bgbench.drivers.mongodb import PerLoop, PyMongoError
from bgbench.drivers.mongodb_options import MongoOptions
from bgbench.errors import StoreError

__all__ = ["MongoGroupAdmin", "MongoGroupKV", "MongoGroups", "group_data"]

Document = dict[str, Any]
READ_BATCH = 1000


def _field(key: str) -> str:
    if not key or "." in key or key.startswith("$"):
        raise ValueError(f"entry key {key!r}: MongoDB field names take no '.' nor leading '$'")
    return f"e.{key}"


def group_data(doc: Document | None) -> GroupData:
    """A group's document as the server answered it, checked (untrusted)."""
    if doc is None:
        return GroupData(0, {})
    version, entries = doc.get("v"), doc.get("e")
    if not isinstance(version, int) or version < 1 or not isinstance(entries, dict):
        raise StoreError(f"MongoDB group {doc.get('_id')!r} not in bgbench's form")
    if not all(isinstance(v, bytes) for v in entries.values()):
        raise StoreError(f"MongoDB group {doc.get('_id')!r}: an entry is not binary")
    return GroupData(version, dict(entries))


def _update(puts: Mapping[str, bytes], deletes: Sequence[str]) -> Document:
    update: Document = {"$inc": {"v": 1}}
    if puts:
        update["$set"] = {_field(k): v for k, v in puts.items()}
    gone = {_field(k): "" for k in deletes if k not in puts}
    if gone:
        update["$unset"] = gone
    return update


class MongoGroupKV:
    """One socialite task's handle (AsyncGroupKV) on one collection of groups."""

    def __init__(self, groups: "MongoGroups", collection: AsyncCollection[Document]) -> None:
        self.groups = groups
        self.collection = collection

    async def read(self, group: str) -> GroupData:
        try:
            return group_data(await self.collection.find_one({"_id": group}))
        except PyMongoError as exc:
            raise self.groups.fault(f"reading group {group!r}", exc) from None

    async def commit(
        self, group: str, version: int, puts: Mapping[str, bytes], deletes: Sequence[str] = ()
    ) -> bool:
        try:
            if version == 0:
                for key in puts:
                    _field(key)
                try:
                    await self.collection.insert_one({"_id": group, "v": 1, "e": dict(puts)})
                except DuplicateKeyError:
                    return False
                return True
            result = await self.collection.update_one(
                {"_id": group, "v": version}, _update(puts, deletes)
            )
        except PyMongoError as exc:
            raise self.groups.fault(f"committing group {group!r}", exc) from None
        return result.matched_count == 1

    async def close(self) -> None:
        """Nothing of its own: the loop's client is the binding's (MongoGroups.aclose)."""


class MongoGroupAdmin:
    """Blocking schema and loading (GroupAdmin) of one collection of groups."""

    def __init__(self, groups: "MongoGroups") -> None:
        self.groups = groups
        self.client: pymongo.MongoClient[Document] = mongo.client(groups.options)
        db = self.client.get_database(groups.options.database)
        self.collection: Collection[Document] = db.get_collection(groups.collection)

    def create_table(self) -> None:
        """Nothing to create: a collection exists once a group is written (_id is indexed)."""

    def replace(self, groups: Iterable[tuple[str, Mapping[str, bytes]]]) -> None:
        batch: list[ReplaceOne[Document]] = []
        try:
            for group, entries in groups:
                for key in entries:
                    _field(key)
                doc = {"_id": group, "v": 1, "e": dict(entries)}
                batch.append(ReplaceOne({"_id": group}, doc, upsert=True))
                if len(batch) >= READ_BATCH:
                    self.collection.bulk_write(batch, ordered=False)
                    batch = []
            if batch:
                self.collection.bulk_write(batch, ordered=False)
        except PyMongoError as exc:
            raise self.groups.fault("loading groups", exc) from None

    def delete(self, groups: Iterable[str]) -> None:
        keys = list(groups)
        try:
            for at in range(0, len(keys), READ_BATCH):
                self.collection.delete_many({"_id": {"$in": keys[at : at + READ_BATCH]}})
        except PyMongoError as exc:
            raise self.groups.fault("deleting groups", exc) from None

    def read_many(self, groups: Sequence[str]) -> dict[str, GroupData]:
        found: dict[str, GroupData] = {g: GroupData(0, {}) for g in groups}
        try:
            for at in range(0, len(groups), READ_BATCH):
                for doc in self.collection.find(
                    {"_id": {"$in": list(groups[at : at + READ_BATCH])}}
                ):
                    if doc["_id"] in found:
                        found[doc["_id"]] = group_data(doc)
        except PyMongoError as exc:
            raise self.groups.fault("reading groups", exc) from None
        return found

    def describe(self) -> str:
        return self.groups.describe()

    def close(self) -> None:
        self.client.close()


class _LoopCollection:
    __slots__ = ("client", "collection")

    def __init__(self, options: MongoOptions, collection: str) -> None:
        self.client = mongo.async_client(options)
        db = self.client.get_database(options.database)
        self.collection: AsyncCollection[Document] = db.get_collection(collection)


class MongoGroups:
    """A binding's collection of groups: asynchronous handles, one client per event loop."""

    concurrency = "asyncio"

    def __init__(self, options: MongoOptions, collection: str) -> None:
        self.options = options
        self.collection = collection
        self.loops = PerLoop(lambda: _LoopCollection(options, collection))

    def fault(self, doing: str, exc: BaseException) -> StoreError:
        where = mongo.where(self.options.uri)
        return StoreError(f"{doing} on {self.options.server_name} at {where}: {mongo.brief(exc)}")

    def admin(self) -> MongoGroupAdmin:
        return MongoGroupAdmin(self)

    async def connect_async(self) -> MongoGroupKV:
        return MongoGroupKV(self, self.loops.get_or_make().collection)

    async def aclose(self) -> None:
        """The running loop's client, closed on its loop."""
        loop_db = self.loops.pop()
        if loop_db is not None:
            await loop_db.client.close()

    def close(self) -> None:
        """Every loop's client is closed on its loop (aclose); forget any left."""
        self.loops.clear()

    def describe(self) -> str:
        return f"{self.options.server_name} at {mongo.where(self.options.uri)}"
