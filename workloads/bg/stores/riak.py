"""Riak KV over its documented HTTP API (httpx): JSON values under plain keys.

    {prefix}member/<mid>    {"attrs", "pic", "resources", "friends": [...], "pending": [...]}
    {prefix}card/<mid>      {"attrs", "tpic"}: what List Friends shows of a member
    {prefix}wall/<mid>      [[rid, creator], ...], newest first
    {prefix}comments/<rid>  {"<mid>": [commenter, text], ...}

Calls used: GET /ping, PUT /types/T/buckets/B/props, GET and PUT
/types/T/buckets/B/keys/K with r, pr, notfound_ok, basic_quorum (reads) and w, dw, pw
(writes) as query parameters. A write is a read-modify-write carrying the value's
X-Riak-Vclock; buckets are made with allow_mult false, so concurrent writers to one key
resolve by last write wins (a lost update is a real Riak outcome the validator counts).

The `consistency` preset follows the Klein et al. settings: "quorum" (r, w, pr, pw at
quorum; notfound_ok false) or "noquorum" (r, w at 1, pr, pw at 0; notfound_ok true);
each quorum option may be set on its own. Not yet run against a real Riak here: no Riak
server can be installed on these machines; the tests run it against an emulator of these
calls (tests/riak_emulator.py), or against a real Riak when BGBENCH_RIAK_URL is set.

Socialites are tasks on the load process's event loop, each with a RiakAsyncConnection
over one httpx.AsyncClient per loop (AsyncRiak), sending the requests the blocking
RiakConnection sends; loading, schema and read-back use the blocking client (Riak).
"""

import base64
from typing import Any, ClassVar

from pydantic import BaseModel

from bgbench.drivers.riak import AsyncRiak, PerLoop, Riak
from bgbench.drivers.riak_options import RiakOptions
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

BUCKETS = ("member", "card", "wall", "comments")


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


class RiakBinding:
    name: ClassVar[str] = "riak"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    full_answers: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = RiakOptions

    def __init__(self, options: RiakOptions) -> None:
        self.options = options
        self.riak = Riak(options)
        self.ready = False
        # an httpx.AsyncClient's connections belong to the loop they were opened on
        self.loop_riaks = PerLoop(lambda: AsyncRiak(options, BUCKETS))

    def create_schema(self, db: BGDatabaseConfig) -> None:
        self.riak.make_buckets(BUCKETS)
        self.ready = True

    def use_schema(self, db: BGDatabaseConfig) -> None:
        self.riak.ping()
        self.ready = True

    def load_fragment(self, fragment: Fragment) -> None:
        members = fragment.members.tolist()
        docs: dict[int, dict[str, Any]] = {
            m: {"attrs": fragment.attributes(m), "pic": _b64(fragment.profile_image),
                "resources": 0, "friends": [], "pending": []}
            for m in members
        }  # fmt: skip
        walls: dict[int, list[list[int]]] = {m: [] for m in members}
        for rid, creator, wall in fragment.resources.tolist():
            docs[wall]["resources"] += 1
            walls[wall].append([rid, creator])
        for inviter, invitee, status in fragment.friendships.tolist():
            if status == CONFIRMED:
                docs[inviter]["friends"].append(invitee)
                docs[invitee]["friends"].append(inviter)
            elif status == PENDING:
                docs[invitee]["pending"].append(inviter)
        comments: dict[int, dict[str, list[Any]]] = {
            r: {} for r in fragment.resources[:, 0].tolist()
        }
        for rid, mid, who, text in fragment.comments():
            comments[rid][str(mid)] = [who, text]
        tpic = _b64(fragment.thumbnail)
        put = self.riak.put
        for m in members:  # plain overwrites replace whatever the fragment held
            fragment.progress()
            put("member", str(m), docs[m])
            put("card", str(m), {"attrs": docs[m]["attrs"], "tpic": tpic})
            put("wall", str(m), sorted(walls[m], reverse=True))
        for rid, cs in comments.items():
            fragment.progress()
            put("comments", str(rid), cs)

    def read_back(self, fragment: Fragment) -> FragmentContents:
        friendships: list[tuple[int, int, int]] = []
        for m in fragment.members.tolist():
            fragment.progress()
            doc, _ = self.riak.get("member", str(m))
            if doc is None:
                raise StoreError(f"member {m} not found")
            friendships += [(m, f, CONFIRMED) for f in doc["friends"] if m < f]
            friendships += [(i, m, PENDING) for i in doc["pending"]]
        comments = []
        for rid in fragment.resources[:, 0].tolist():
            fragment.progress()
            cs, _ = self.riak.get("comments", str(rid))
            comments += [(rid, int(mid)) for mid in cs or {}]
        return FragmentContents(friendships, comments)

    def connect(self) -> "RiakConnection":
        if not self.ready:
            raise StoreError("create_schema or use_schema must run before connect")
        return RiakConnection(self.riak)

    async def connect_async(self) -> "RiakAsyncConnection":
        if not self.ready:
            raise StoreError("create_schema or use_schema must run before connect")
        return RiakAsyncConnection(self.loop_riaks.get_or_make())

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


def edit_lists(
    doc: dict[str, Any], what: str, remove: tuple[str, int] | None, add: tuple[str, int] | None
) -> None:
    """Take a member out of one of a member document's lists (it must be there) and/or
    put one into a list (once)."""
    if remove is not None:
        field, value = remove
        if value not in doc[field]:
            raise StoreError(f"{what}: no matching row")
        doc[field].remove(value)
    if add is not None and add[1] not in doc[add[0]]:
        doc[add[0]].append(add[1])


class RiakConnection:
    def __init__(self, riak: Riak) -> None:
        self.riak = riak

    def _member(self, m: int) -> tuple[dict[str, Any], str | None]:
        doc, vclock = self.riak.get("member", str(m))
        if doc is None:
            raise StoreError(f"member {m} not found")
        return doc, vclock

    def view_profile(self, requester: int, member: int) -> Profile:
        doc, _ = self._member(member)
        pending = len(doc["pending"]) if requester == member else None
        return Profile(member, doc["attrs"], len(doc["friends"]), doc["resources"], pending,
                       _unb64(doc["pic"]))  # fmt: skip

    def _cards(self, ids: list[int]) -> list[MemberRow]:
        rows = []
        for m in ids:
            card, _ = self.riak.get("card", str(m))
            if card is None:
                raise StoreError(f"member {m} not found")
            rows.append(MemberRow(m, card["attrs"], _unb64(card["tpic"])))
        return rows

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return self._cards(self._member(member)[0]["friends"])

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return self._cards(self._member(member)[0]["pending"])

    def _change(
        self,
        m: int,
        what: str,
        remove: tuple[str, int] | None = None,
        add: tuple[str, int] | None = None,
    ) -> None:
        """One read-modify-write of member m: take a member out of one of her lists (it
        must be there) and/or put one into a list (once)."""
        doc, vclock = self._member(m)
        edit_lists(doc, what, remove, add)
        self.riak.put("member", str(m), doc, vclock)

    def invite_friend(self, inviter: int, invitee: int) -> None:
        self._change(invitee, f"invite {inviter}->{invitee}", add=("pending", inviter))

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        what = f"accept invitation {inviter}->{invitee}"
        self._change(invitee, what, remove=("pending", inviter), add=("friends", inviter))
        self._change(inviter, what, add=("friends", invitee))

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self._change(
            invitee, f"reject invitation {inviter}->{invitee}", remove=("pending", inviter)
        )

    def thaw_friendship(self, member: int, friend: int) -> None:
        what = f"thaw friendship {member}-{friend}"
        self._change(member, what, remove=("friends", friend))
        self._change(friend, what, remove=("friends", member))

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        wall, _ = self.riak.get("wall", str(member))
        return [ResourceRow(rid, creator, member) for rid, creator in (wall or [])[:k]]

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        cs, _ = self.riak.get("comments", str(rid))
        return [CommentRow(rid, int(mid), who, text) for mid, (who, text) in (cs or {}).items()]

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        cs, vclock = self.riak.get("comments", str(rid))
        cs = cs or {}
        cs[str(mid)] = [commenter, text]
        self.riak.put("comments", str(rid), cs, vclock)

    def delete_comment(self, rid: int, mid: int) -> None:
        cs, vclock = self.riak.get("comments", str(rid))
        if not cs or str(mid) not in cs:
            raise StoreError(f"comment {rid}/{mid}: no matching row")
        del cs[str(mid)]
        self.riak.put("comments", str(rid), cs, vclock)

    def close(self) -> None:
        pass


class RiakAsyncConnection:
    """RiakConnection's reads and read-modify-writes, each request awaited."""

    __slots__ = ("riak",)

    def __init__(self, riak: AsyncRiak) -> None:
        self.riak = riak

    async def _member(self, m: int) -> tuple[dict[str, Any], str | None]:
        doc, vclock = await self.riak.get("member", str(m))
        if doc is None:
            raise StoreError(f"member {m} not found")
        return doc, vclock

    async def view_profile(self, requester: int, member: int) -> Profile:
        doc, _ = await self._member(member)
        pending = len(doc["pending"]) if requester == member else None
        return Profile(member, doc["attrs"], len(doc["friends"]), doc["resources"], pending,
                       _unb64(doc["pic"]))  # fmt: skip

    async def _cards(self, ids: list[int]) -> list[MemberRow]:
        rows = []
        get = self.riak.get
        for m in ids:
            card, _ = await get("card", str(m))
            if card is None:
                raise StoreError(f"member {m} not found")
            rows.append(MemberRow(m, card["attrs"], _unb64(card["tpic"])))
        return rows

    async def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return await self._cards((await self._member(member))[0]["friends"])

    async def view_friend_requests(self, member: int) -> list[MemberRow]:
        return await self._cards((await self._member(member))[0]["pending"])

    async def _change(
        self,
        m: int,
        what: str,
        remove: tuple[str, int] | None = None,
        add: tuple[str, int] | None = None,
    ) -> None:
        """As RiakConnection._change: one read-modify-write of member m."""
        doc, vclock = await self._member(m)
        edit_lists(doc, what, remove, add)
        await self.riak.put("member", str(m), doc, vclock)

    async def invite_friend(self, inviter: int, invitee: int) -> None:
        await self._change(invitee, f"invite {inviter}->{invitee}", add=("pending", inviter))

    async def accept_friend_request(self, inviter: int, invitee: int) -> None:
        what = f"accept invitation {inviter}->{invitee}"
        await self._change(invitee, what, remove=("pending", inviter), add=("friends", inviter))
        await self._change(inviter, what, add=("friends", invitee))

    async def reject_friend_request(self, inviter: int, invitee: int) -> None:
        await self._change(
            invitee, f"reject invitation {inviter}->{invitee}", remove=("pending", inviter)
        )

    async def thaw_friendship(self, member: int, friend: int) -> None:
        what = f"thaw friendship {member}-{friend}"
        await self._change(member, what, remove=("friends", friend))
        await self._change(friend, what, remove=("friends", member))

    async def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        wall, _ = await self.riak.get("wall", str(member))
        return [ResourceRow(rid, creator, member) for rid, creator in (wall or [])[:k]]

    async def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        cs, _ = await self.riak.get("comments", str(rid))
        return [CommentRow(rid, int(mid), who, text) for mid, (who, text) in (cs or {}).items()]

    async def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        cs, vclock = await self.riak.get("comments", str(rid))
        cs = cs or {}
        cs[str(mid)] = [commenter, text]
        await self.riak.put("comments", str(rid), cs, vclock)

    async def delete_comment(self, rid: int, mid: int) -> None:
        cs, vclock = await self.riak.get("comments", str(rid))
        if not cs or str(mid) not in cs:
            raise StoreError(f"comment {rid}/{mid}: no matching row")
        del cs[str(mid)]
        await self.riak.put("comments", str(rid), cs, vclock)

    async def close(self) -> None:
        pass  # the loop's client is shared; the binding's aclose() closes it
