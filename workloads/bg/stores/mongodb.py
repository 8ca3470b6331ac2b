"""MongoDB (pymongo): the JSON-like design of the paper's Figure 1.b.

A member document holds her attributes, images and two arrays, confirmedFriends and
pendingFriends (the members who invited her); resources hold their comments in a
`manipulations` array, or, as a setting, comments live in their own collection (the
paper's Figure 5). Only operations real MongoDB supports are used (no transactions: a
friendship write updates two documents one after the other), so the binding runs
unchanged against a real mongod. Results name the server they ran on: MongoDB-wire
servers such as SecantusDB or FerretDB report a MongoDB version, so `server_name` says
which one it is.

Socialites are tasks on the load process's event loop, each with a MongoAsyncConnection
over one AsyncMongoClient per loop (pymongo's native asyncio driver); it sends exactly
the commands the blocking MongoConnection sends. Loading, schema, read-back and describe
use the blocking MongoClient.
"""

from typing import Any, ClassVar

import pymongo
from pydantic import BaseModel
from pymongo.asynchronous.collection import AsyncCollection

from bgbench.drivers import mongodb as mongo
from bgbench.drivers.mongodb import PerLoop, PyMongoError
from bgbench.errors import StoreError
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.generator import CONFIRMED, PENDING, Fragment
from bgbench.workloads.bg.store import (
    CommentRow,
    Concurrency,
    FragmentContents,
    MemberRow,
    Profile,
    ResourceRow,
)
from bgbench.workloads.bg.stores.options import MongoOptions
from bgbench.workloads.loading import ROWS_PER_BEAT, beating

BATCH = 1000


class _LoopDatabase:
    """One event loop's client and the collections its connections share."""

    __slots__ = ("client", "manipulations", "resources", "users")

    def __init__(self, options: MongoOptions) -> None:
        self.client = mongo.async_client(options)
        db = self.client.get_database(options.database, **_database_options(options))
        self.users: AsyncCollection[Any] = db.users
        self.resources: AsyncCollection[Any] = db.resources
        self.manipulations: AsyncCollection[Any] = db.manipulations


def _database_options(o: MongoOptions) -> dict[str, Any]:
    return mongo.concern(o.write_concern, o.journal, o.read_preference)


class MongoBinding:
    name: ClassVar[str] = "mongodb"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    full_answers: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = MongoOptions

    def __init__(self, options: MongoOptions) -> None:
        self.options = options
        self.client: pymongo.MongoClient[Any] = mongo.client(options)
        self.db = self.client.get_database(options.database, **_database_options(options))
        self.attrcount: int | None = None
        # AsyncMongoClient binds itself to the loop it first runs on: one per loop.
        self.loop_dbs = PerLoop(lambda: _LoopDatabase(options))

    def create_schema(self, db: BGDatabaseConfig) -> None:
        self.attrcount = db.attrcount
        try:
            self.db.resources.create_index("walluserid")
            if self.options.comments == "collection":
                self.db.manipulations.create_index("rid")
        except PyMongoError as exc:
            raise mongo.unreachable(self.options, exc) from None

    def use_schema(self, db: BGDatabaseConfig) -> None:
        self.attrcount = db.attrcount

    def load_fragment(self, fragment: Fragment) -> None:
        members = fragment.members.tolist()
        friends: dict[int, list[int]] = {m: [] for m in members}
        pending: dict[int, list[int]] = {m: [] for m in members}
        for inviter, invitee, status in fragment.friendships.tolist():
            if status == CONFIRMED:
                friends[inviter].append(invitee)
                friends[invitee].append(inviter)
            elif status == PENDING:
                pending[invitee].append(inviter)
        comments: dict[int, list[dict[str, Any]]] = {}
        for rid, mid, who, text in fragment.comments():
            comments.setdefault(rid, []).append({"mid": mid, "modifierid": who, "content": text})
        rids = fragment.resources[:, 0].tolist()
        db = self.db
        db.users.delete_many({"_id": {"$in": members}})
        db.resources.delete_many({"_id": {"$in": rids}})
        if self.options.comments == "collection":
            db.manipulations.delete_many({"rid": {"$in": rids}})
        pic, thumb = fragment.profile_image, fragment.thumbnail
        users = [
            {"_id": m, "attrs": fragment.attributes(m), "pic": pic, "tpic": thumb,
             "confirmedFriends": friends[m], "pendingFriends": pending[m]}
            for m in members
        ]  # fmt: skip
        embedded = self.options.comments == "embedded"
        resources = [
            {"_id": rid, "creatorid": c, "walluserid": w,
             **({"manipulations": comments.get(rid, [])} if embedded else {})}
            for rid, c, w in fragment.resources.tolist()
        ]  # fmt: skip
        for collection, docs in ((db.users, users), (db.resources, resources)):
            for lo in range(0, len(docs), BATCH):
                fragment.progress()
                collection.insert_many(docs[lo : lo + BATCH], ordered=False)
        if not embedded:
            docs = [
                {"_id": f"{rid}:{c['mid']}", "rid": rid, **c}
                for rid, cs in comments.items()
                for c in cs
            ]
            for lo in range(0, len(docs), BATCH):
                fragment.progress()
                db.manipulations.insert_many(docs[lo : lo + BATCH], ordered=False)

    def read_back(self, fragment: Fragment) -> FragmentContents:
        members = fragment.members.tolist()
        rows: list[tuple[int, int, int]] = []
        users = self.db.users.find(
            {"_id": {"$in": members}}, {"confirmedFriends": 1, "pendingFriends": 1}
        )
        for doc in beating(users, fragment.progress, ROWS_PER_BEAT):
            m = doc["_id"]
            rows += [(m, f, CONFIRMED) for f in doc["confirmedFriends"] if m < f]
            rows += [(inviter, m, PENDING) for inviter in doc["pendingFriends"]]
        rids = fragment.resources[:, 0].tolist()
        if self.options.comments == "embedded":
            comments = [
                (doc["_id"], c["mid"])
                for doc in beating(
                    self.db.resources.find({"_id": {"$in": rids}}, {"manipulations": 1}),
                    fragment.progress,
                    ROWS_PER_BEAT,
                )
                for c in doc.get("manipulations", [])
            ]
        else:
            comments = [
                (d["rid"], d["mid"])
                for d in beating(
                    self.db.manipulations.find({"rid": {"$in": rids}}, {"rid": 1, "mid": 1}),
                    fragment.progress,
                    ROWS_PER_BEAT,
                )
            ]
        return FragmentContents(rows, comments)

    def connect(self) -> "MongoConnection":
        if self.attrcount is None:
            raise StoreError("create_schema or use_schema must run before connect")
        return MongoConnection(self.db, self.options.comments == "embedded")

    async def connect_async(self) -> "MongoAsyncConnection":
        if self.attrcount is None:
            raise StoreError("create_schema or use_schema must run before connect")
        return MongoAsyncConnection(
            self.loop_dbs.get_or_make(), self.options.comments == "embedded"
        )

    async def aclose(self) -> None:
        db = self.loop_dbs.pop()
        if db is not None:
            await db.client.close()

    def describe(self) -> str:
        version = mongo.server_version(self.client)
        return (
            f"{self.options.server_name} (reports MongoDB {version}; comments "
            f"{self.options.comments}, w={self.options.write_concern})"
        )

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.loop_dbs.clear()  # a loop's client is closed by aclose() on that loop
        self.client.close()


class MongoConnection:
    def __init__(self, db, embedded: bool) -> None:  # type: ignore[no-untyped-def]
        self.db = db
        self.embedded = embedded

    def view_profile(self, requester: int, member: int) -> Profile:
        doc = self.db.users.find_one({"_id": member}, {"tpic": 0})
        if doc is None:
            raise StoreError(f"member {member} not found")
        resources = self.db.resources.count_documents({"walluserid": member})
        pending = len(doc["pendingFriends"]) if requester == member else None
        return Profile(member, doc["attrs"], len(doc["confirmedFriends"]), resources, pending,
                       doc.get("pic"))  # fmt: skip

    def _members(self, member: int, field: str) -> list[MemberRow]:
        doc = self.db.users.find_one({"_id": member}, {field: 1})
        if doc is None:
            raise StoreError(f"member {member} not found")
        ids = doc[field]
        if not ids:
            return []
        rows = self.db.users.find({"_id": {"$in": ids}}, {"attrs": 1, "tpic": 1})
        return [MemberRow(r["_id"], r["attrs"], r.get("tpic")) for r in rows]

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return self._members(member, "confirmedFriends")

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return self._members(member, "pendingFriends")

    def _update(self, query: dict[str, Any], change: dict[str, Any], what: str) -> None:
        if self.db.users.update_one(query, change).modified_count != 1:
            raise StoreError(f"{what}: no matching row")

    def invite_friend(self, inviter: int, invitee: int) -> None:
        self._update(
            {"_id": invitee, "pendingFriends": {"$ne": inviter}},
            {"$push": {"pendingFriends": inviter}},
            f"invite {inviter}->{invitee}",
        )

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        self._update(
            {"_id": invitee, "pendingFriends": inviter},
            {"$pull": {"pendingFriends": inviter}, "$addToSet": {"confirmedFriends": inviter}},
            f"accept invitation {inviter}->{invitee}",
        )
        self._update(
            {"_id": inviter}, {"$addToSet": {"confirmedFriends": invitee}}, f"befriend {inviter}"
        )

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self._update(
            {"_id": invitee, "pendingFriends": inviter},
            {"$pull": {"pendingFriends": inviter}},
            f"reject invitation {inviter}->{invitee}",
        )

    def thaw_friendship(self, member: int, friend: int) -> None:
        self._update(
            {"_id": member, "confirmedFriends": friend},
            {"$pull": {"confirmedFriends": friend}},
            f"thaw friendship {member}-{friend}",
        )
        self._update(
            {"_id": friend, "confirmedFriends": member},
            {"$pull": {"confirmedFriends": member}},
            f"thaw friendship {friend}-{member}",
        )

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        docs = (
            self.db.resources.find({"walluserid": member}, {"creatorid": 1, "walluserid": 1})
            .sort("_id", -1)
            .limit(k)
        )
        return [ResourceRow(d["_id"], d["creatorid"], d["walluserid"]) for d in docs]

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        if self.embedded:
            doc = self.db.resources.find_one({"_id": rid}, {"manipulations": 1})
            if doc is None:
                raise StoreError(f"resource {rid} not found")
            cs = doc.get("manipulations", [])
        else:
            cs = list(self.db.manipulations.find({"rid": rid}))
        return [CommentRow(rid, c["mid"], c["modifierid"], c["content"]) for c in cs]

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        comment = {"mid": mid, "modifierid": commenter, "content": text}
        if self.embedded:
            r = self.db.resources.update_one({"_id": rid}, {"$push": {"manipulations": comment}})
            if r.modified_count != 1:
                raise StoreError(f"post on resource {rid}: no matching row")
        else:
            self.db.manipulations.insert_one({"_id": f"{rid}:{mid}", "rid": rid, **comment})

    def delete_comment(self, rid: int, mid: int) -> None:
        if self.embedded:
            r = self.db.resources.update_one(
                {"_id": rid, "manipulations.mid": mid}, {"$pull": {"manipulations": {"mid": mid}}}
            )
            done = r.modified_count
        else:
            done = self.db.manipulations.delete_one({"_id": f"{rid}:{mid}"}).deleted_count
        if done != 1:
            raise StoreError(f"comment {rid}/{mid}: no matching row")

    def close(self) -> None:
        pass


# What the asynchronous connection's calls share: projections and sort, made once.
_NO_THUMBNAIL = {"tpic": 0}
_CARD = {"attrs": 1, "tpic": 1}
_FRIEND_IDS = {"confirmedFriends": 1}
_INVITER_IDS = {"pendingFriends": 1}
_WALL = {"creatorid": 1, "walluserid": 1}
_NEWEST_FIRST = [("_id", -1)]
_COMMENTS = {"manipulations": 1}


class MongoAsyncConnection:
    """MongoConnection's commands, each awaited, over its loop's client."""

    __slots__ = ("embedded", "manipulations", "resources", "users")

    def __init__(self, db: _LoopDatabase, embedded: bool) -> None:
        self.users = db.users
        self.resources = db.resources
        self.manipulations = db.manipulations
        self.embedded = embedded

    async def view_profile(self, requester: int, member: int) -> Profile:
        doc = await self.users.find_one({"_id": member}, _NO_THUMBNAIL)
        if doc is None:
            raise StoreError(f"member {member} not found")
        resources = await self.resources.count_documents({"walluserid": member})
        pending = len(doc["pendingFriends"]) if requester == member else None
        return Profile(member, doc["attrs"], len(doc["confirmedFriends"]), resources, pending,
                       doc.get("pic"))  # fmt: skip

    async def _members(
        self, member: int, field: str, projection: dict[str, Any]
    ) -> list[MemberRow]:
        doc = await self.users.find_one({"_id": member}, projection)
        if doc is None:
            raise StoreError(f"member {member} not found")
        ids = doc[field]
        if not ids:
            return []
        rows = await self.users.find({"_id": {"$in": ids}}, _CARD).to_list()
        return [MemberRow(r["_id"], r["attrs"], r.get("tpic")) for r in rows]

    async def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return await self._members(member, "confirmedFriends", _FRIEND_IDS)

    async def view_friend_requests(self, member: int) -> list[MemberRow]:
        return await self._members(member, "pendingFriends", _INVITER_IDS)

    async def _update(self, query: dict[str, Any], change: dict[str, Any], what: str) -> None:
        if (await self.users.update_one(query, change)).modified_count != 1:
            raise StoreError(f"{what}: no matching row")

    async def invite_friend(self, inviter: int, invitee: int) -> None:
        await self._update(
            {"_id": invitee, "pendingFriends": {"$ne": inviter}},
            {"$push": {"pendingFriends": inviter}},
            f"invite {inviter}->{invitee}",
        )

    async def accept_friend_request(self, inviter: int, invitee: int) -> None:
        await self._update(
            {"_id": invitee, "pendingFriends": inviter},
            {"$pull": {"pendingFriends": inviter}, "$addToSet": {"confirmedFriends": inviter}},
            f"accept invitation {inviter}->{invitee}",
        )
        await self._update(
            {"_id": inviter}, {"$addToSet": {"confirmedFriends": invitee}}, f"befriend {inviter}"
        )

    async def reject_friend_request(self, inviter: int, invitee: int) -> None:
        await self._update(
            {"_id": invitee, "pendingFriends": inviter},
            {"$pull": {"pendingFriends": inviter}},
            f"reject invitation {inviter}->{invitee}",
        )

    async def thaw_friendship(self, member: int, friend: int) -> None:
        await self._update(
            {"_id": member, "confirmedFriends": friend},
            {"$pull": {"confirmedFriends": friend}},
            f"thaw friendship {member}-{friend}",
        )
        await self._update(
            {"_id": friend, "confirmedFriends": member},
            {"$pull": {"confirmedFriends": member}},
            f"thaw friendship {friend}-{member}",
        )

    async def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        docs = await self.resources.find(
            {"walluserid": member}, _WALL, sort=_NEWEST_FIRST, limit=k
        ).to_list()
        return [ResourceRow(d["_id"], d["creatorid"], d["walluserid"]) for d in docs]

    async def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        if self.embedded:
            doc = await self.resources.find_one({"_id": rid}, _COMMENTS)
            if doc is None:
                raise StoreError(f"resource {rid} not found")
            cs = doc.get("manipulations", [])
        else:
            cs = await self.manipulations.find({"rid": rid}).to_list()
        return [CommentRow(rid, c["mid"], c["modifierid"], c["content"]) for c in cs]

    async def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        comment = {"mid": mid, "modifierid": commenter, "content": text}
        if self.embedded:
            r = await self.resources.update_one({"_id": rid}, {"$push": {"manipulations": comment}})
            if r.modified_count != 1:
                raise StoreError(f"post on resource {rid}: no matching row")
        else:
            await self.manipulations.insert_one({"_id": f"{rid}:{mid}", "rid": rid, **comment})

    async def delete_comment(self, rid: int, mid: int) -> None:
        if self.embedded:
            r = await self.resources.update_one(
                {"_id": rid, "manipulations.mid": mid}, {"$pull": {"manipulations": {"mid": mid}}}
            )
            done = r.modified_count
        else:
            done = (await self.manipulations.delete_one({"_id": f"{rid}:{mid}"})).deleted_count
        if done != 1:
            raise StoreError(f"comment {rid}/{mid}: no matching row")

    async def close(self) -> None:
        pass  # the loop's client is shared; the binding's aclose() closes it
