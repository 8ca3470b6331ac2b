"""CASQL: PostgreSQL with memcached in front (the paper's cache-augmented SQL).

Each read action's result is cached under a key built from the action and its
arguments. Consistency, as a setting:
- invalidation: after it commits, every write invalidates exactly the keys the paper
  lists for it (sections C.1 to C.3), leaving a short-lived marker so a reader that
  computed its value before the commit cannot put it back (Gumball's idea);
- ttl: keys expire after `ttl_s`; writes invalidate nothing, so reads can be stale.
Values are the rows in MessagePack, large ones zlib-compressed as a setting
(casql_values.py); memcached has no authentication, so a value that is not exactly what a
binding cached is rejected: the read is served from PostgreSQL, the value replaced as
after a miss, and counted. A value
over memcached's item limit is served from PostgreSQL, never cached, and counted. Replies
are always awaited (pymemcache defaults to noreply).

Socialites are tasks on the load process's event loop: PostgreSQL through the asyncpg
connection of PostgresBinding, memcached through aiomcache (aio-libs' asyncio client),
one memcached connection per socialite as before, every command bounded by `timeout_s`.
A command that fails or times out drops that connection (its reply may still be on the
way) and the next command opens another, as pymemcache does. Flushing at load and the
version in describe() stay blocking (pymemcache), as does connect().
"""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar

import aiomcache
from pydantic import BaseModel, TypeAdapter
from pymemcache.client.base import Client  # type: ignore[import-untyped]

from bgbench.drivers import first_line
from bgbench.drivers import memcached as mc
from bgbench.errors import StoreError
from bgbench.workloads.bg.config import BGDatabaseConfig
from bgbench.workloads.bg.store import CommentRow, MemberRow, Profile, ResourceRow
from bgbench.workloads.bg.stores.casql_values import (
    COMMENTS,
    MEMBERS,
    PROFILE,
    RESOURCES,
    decode,
    encode,
)
from bgbench.workloads.bg.stores.options import CasqlOptions
from bgbench.workloads.bg.stores.postgres import (
    PostgresAsyncConnection,
    PostgresBinding,
    PostgresConnection,
)

MARKER = b"\x00bgbench:invalidated"
T = TypeVar("T")


class CasqlBinding(PostgresBinding):
    name: ClassVar[str] = "casql"
    Options: ClassVar[type[BaseModel]] = CasqlOptions

    def __init__(self, options: CasqlOptions) -> None:
        super().__init__(options)
        self.cache_options = options
        self.stats = {"hits": 0, "misses": 0, "oversized": 0, "invalidations": 0, "rejected": 0}

    def _memcached(self, command: Callable[[Client], T], first_contact: bool = False) -> T:
        """A blocking command on a connection of its own. On first contact (preparing), a
        memcached that cannot be reached is the user's to fix, as PostgreSQL's dsn is;
        later it is a fault of the store."""
        return mc.command(self.cache_options, command, first_contact)

    def create_schema(self, db: BGDatabaseConfig) -> None:
        super().create_schema(db)
        self._memcached(Client.version, first_contact=True)

    def load_fragment(self, fragment) -> None:  # type: ignore[no-untyped-def]
        super().load_fragment(fragment)
        # cached results of the old rows are void
        self._memcached(lambda client: client.flush_all(noreply=False))

    def connect(self) -> "CasqlConnection":  # type: ignore[override]
        base = super().connect()
        return CasqlConnection(base, mc.client(self.cache_options), self.cache_options, self.stats)

    async def connect_async(self) -> "CasqlAsyncConnection":  # type: ignore[override]
        base = await super().connect_async()
        cache = mc.async_client(self.cache_options)  # the socialite's own connection
        return CasqlAsyncConnection(base, cache, self.cache_options, self.stats)

    def describe(self) -> str:
        version = mc.version(self.cache_options)
        o = self.cache_options
        mode = "invalidation" if o.consistency == "invalidation" else f"TTL {o.ttl_s} s"
        return f"CASQL: {super().describe()} + memcached {version} ({mode})"

    def counters(self) -> dict[str, int]:
        return dict(self.stats)


# -- keys, and what each write invalidates (the paper's sections C.1 to C.3) --------------
def _profile_key(requester: int, member: int) -> bytes:
    return b"vps:%d" % member if requester == member else b"vpb:%d" % member


def _request_keys(invitee: int) -> tuple[bytes, ...]:
    """An invitation made (IF) or rejected (RFR): the invitee's own profile and requests."""
    return b"vps:%d" % invitee, b"vfr:%d" % invitee


def _friendship_keys(a: int, b: int) -> tuple[bytes, ...]:
    """A friendship made (AFR) or thawed (TF): both members' profiles and friend lists."""
    return (b"vps:%d" % a, b"vps:%d" % b, b"vpb:%d" % a, b"vpb:%d" % b, b"lf:%d" % a,
            b"lf:%d" % b)  # fmt: skip


def _profile_row(p: Profile) -> tuple[Any, ...]:
    return p.member, p.attributes, p.friend_count, p.resource_count, p.pending_count, p.image


def _cached(
    raw: bytes | None, cas: Any, shape: TypeAdapter[Any], compress: bool, stats: dict[str, Any]
) -> tuple[Any, Any]:
    """What a get found: (the value or None on a miss, the token to fill the key with).
    A marker or a value that is not one a binding cached (see casql_values) is a miss
    whose key is filled over it, as over a marker."""
    if raw is None:
        stats["misses"] += 1
        return None, None
    if raw == MARKER:
        stats["misses"] += 1
        return None, cas
    value = decode(shape, raw, compress)
    if value is None:  # not a value a binding cached: never trusted, filled over
        stats["misses"] += 1
        stats["rejected"] += 1
        return None, cas
    stats["hits"] += 1
    return value, None


class CasqlAsyncConnection:
    """One socialite task's handle: its asyncpg connection and its memcached connection."""

    __slots__ = (
        "cache", "compress", "db", "expired", "invalidate", "lease", "loop", "stats", "timeout",
        "ttl", "where",
    )  # fmt: skip

    def __init__(
        self,
        db: PostgresAsyncConnection,
        cache: aiomcache.Client,
        o: CasqlOptions,
        stats: dict[str, Any],
    ) -> None:
        self.db = db
        self.cache = cache
        self.ttl = o.ttl_s if o.consistency == "ttl" else 0
        self.lease = o.lease_s
        self.invalidate = o.consistency == "invalidation"
        self.compress = o.compress
        self.timeout = o.timeout_s
        self.where = o.memcached
        self.stats = stats
        self.loop = asyncio.get_running_loop()
        self.expired = False

    def _expire(self, task: "asyncio.Task[Any] | None") -> None:
        self.expired = True
        if task is not None:
            task.cancel()

    async def _command(self, call: Callable[..., Awaitable[T]], *args: object) -> T:
        """One memcached command within timeout_s (a bare timer: asyncio.timeout costs more
        per command). A failure leaves the connection in an unknown state, a timed-out
        reply may still arrive on it: drop it."""
        task = asyncio.current_task()
        timer = self.loop.call_later(self.timeout, self._expire, task)
        try:
            return await call(*args)
        except BaseException as exc:
            await self.cache.close()
            if self.expired:
                self.expired = False
                task.uncancel()  # type: ignore[union-attr]
                raise TimeoutError(
                    f"memcached at {self.where} did not answer in {self.timeout:g} s"
                ) from None
            if isinstance(exc, OSError):
                raise StoreError(f"memcached at {self.where}: {first_line(exc)}") from None
            raise
        finally:
            timer.cancel()

    # -- the cache: as CasqlConnection's --------------------------------------------
    async def _get(self, key: bytes, shape: TypeAdapter[Any]) -> tuple[Any, int | None]:
        """(value or None on a miss, the token to fill the key with)."""
        raw, cas = await self._command(self.cache.gets, key)
        return _cached(raw, cas, shape, self.compress, self.stats)

    async def _set(
        self, key: bytes, shape: TypeAdapter[Any], value: object, token: int | None
    ) -> None:
        raw = encode(shape, value, self.compress)
        if raw is None:
            self.stats["oversized"] += 1  # served from PostgreSQL, never cached
            return
        cache = self.cache
        if not self.invalidate:
            await self._command(cache.set, key, raw, self.ttl)
        elif token is None:
            await self._command(cache.add, key, raw)  # loses to a marker set meanwhile
        else:
            await self._command(cache.cas, key, raw, token)  # only over the marker it saw

    async def _drop(self, keys: tuple[bytes, ...]) -> None:
        if self.invalidate:
            for key in keys:
                await self._command(self.cache.set, key, MARKER, self.lease)
            self.stats["invalidations"] += len(keys)

    # -- reads -------------------------------------------------------------------
    async def view_profile(self, requester: int, member: int) -> Profile:
        key = _profile_key(requester, member)
        hit, token = await self._get(key, PROFILE)
        if hit is not None:
            return Profile(*hit)
        p = await self.db.view_profile(requester, member)
        await self._set(key, PROFILE, _profile_row(p), token)
        return p

    async def _members(
        self, key: bytes, load: Callable[..., Awaitable[list[MemberRow]]], *args: int
    ) -> list[MemberRow]:
        hit, token = await self._get(key, MEMBERS)
        if hit is not None:
            return [MemberRow(*r) for r in hit]
        rows = await load(*args)
        await self._set(key, MEMBERS, [(r.member, r.attributes, r.thumbnail) for r in rows], token)
        return rows

    async def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return await self._members(b"lf:%d" % member, self.db.list_friends, requester, member)

    async def view_friend_requests(self, member: int) -> list[MemberRow]:
        return await self._members(b"vfr:%d" % member, self.db.view_friend_requests, member)

    async def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        key = b"vtr:%d:%d" % (member, k)
        hit, token = await self._get(key, RESOURCES)
        if hit is not None:
            return [ResourceRow(*r) for r in hit]
        rows = await self.db.view_top_k_resources(requester, member, k)
        await self._set(key, RESOURCES, [(r.rid, r.creator, r.wall) for r in rows], token)
        return rows

    async def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        key = b"vcr:%d" % rid
        hit, token = await self._get(key, COMMENTS)
        if hit is not None:
            return [CommentRow(*r) for r in hit]
        rows = await self.db.view_comments(requester, rid)
        await self._set(key, COMMENTS, [(r.rid, r.mid, r.commenter, r.text) for r in rows], token)
        return rows

    # -- writes: the database first, then the keys the paper lists --------------------
    async def invite_friend(self, inviter: int, invitee: int) -> None:
        await self.db.invite_friend(inviter, invitee)
        await self._drop(_request_keys(invitee))

    async def accept_friend_request(self, inviter: int, invitee: int) -> None:
        await self.db.accept_friend_request(inviter, invitee)
        await self._drop((*_friendship_keys(invitee, inviter), b"vfr:%d" % invitee))

    async def reject_friend_request(self, inviter: int, invitee: int) -> None:
        await self.db.reject_friend_request(inviter, invitee)
        await self._drop(_request_keys(invitee))

    async def thaw_friendship(self, member: int, friend: int) -> None:
        await self.db.thaw_friendship(member, friend)
        await self._drop(_friendship_keys(member, friend))

    async def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        await self.db.post_comment(commenter, rid, mid, text)
        await self._drop((b"vcr:%d" % rid,))

    async def delete_comment(self, rid: int, mid: int) -> None:
        await self.db.delete_comment(rid, mid)
        await self._drop((b"vcr:%d" % rid,))

    async def close(self) -> None:
        try:
            await self.cache.close()
        finally:
            await self.db.close()


class CasqlConnection:
    """The blocking connection (tools): the same cache protocol over pymemcache and psycopg."""

    def __init__(
        self, db: PostgresConnection, cache: Client, o: CasqlOptions, stats: dict[str, Any]
    ) -> None:
        self.db = db
        self.cache = cache
        self.ttl = o.ttl_s if o.consistency == "ttl" else 0
        self.lease = o.lease_s
        self.invalidate = o.consistency == "invalidation"
        self.compress = o.compress
        self.stats = stats

    # -- the cache ---------------------------------------------------------------
    # Invalidation leaves a marker (a lease, as the paper's Gumball) instead of deleting:
    # a reader that missed fills the key with `add` (or `cas` over a marker it saw), so a
    # value computed before a write committed can never land after that write's marker.
    def _get(self, key: bytes, shape: TypeAdapter[Any]) -> tuple[Any, object]:
        """(value or None on a miss, the token to fill the key with)."""
        raw, cas = self.cache.gets(key)
        return _cached(raw, cas, shape, self.compress, self.stats)

    def _set(self, key: bytes, shape: TypeAdapter[Any], value: object, token: object) -> None:
        raw = encode(shape, value, self.compress)
        if raw is None:
            self.stats["oversized"] += 1  # served from PostgreSQL, never cached
            return
        if not self.invalidate:
            self.cache.set(key, raw, expire=self.ttl, noreply=False)
        elif token is None:
            self.cache.add(key, raw, noreply=False)  # loses to a marker set meanwhile
        else:
            self.cache.cas(key, raw, token, noreply=False)  # only over the marker it saw

    def _drop(self, keys: tuple[bytes, ...]) -> None:
        if self.invalidate:
            self.cache.set_many(dict.fromkeys(keys, MARKER), expire=self.lease, noreply=False)
            self.stats["invalidations"] += len(keys)

    # -- reads -------------------------------------------------------------------
    def view_profile(self, requester: int, member: int) -> Profile:
        key = _profile_key(requester, member)
        hit, token = self._get(key, PROFILE)
        if hit is not None:
            return Profile(*hit)
        p = self.db.view_profile(requester, member)
        self._set(key, PROFILE, _profile_row(p), token)
        return p

    def _members(
        self, key: bytes, load: Callable[..., list[MemberRow]], *args: int
    ) -> list[MemberRow]:
        hit, token = self._get(key, MEMBERS)
        if hit is not None:
            return [MemberRow(*r) for r in hit]
        rows = load(*args)
        self._set(key, MEMBERS, [(r.member, r.attributes, r.thumbnail) for r in rows], token)
        return rows

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return self._members(b"lf:%d" % member, self.db.list_friends, requester, member)

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return self._members(b"vfr:%d" % member, self.db.view_friend_requests, member)

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        key = b"vtr:%d:%d" % (member, k)
        hit, token = self._get(key, RESOURCES)
        if hit is not None:
            return [ResourceRow(*r) for r in hit]
        rows = self.db.view_top_k_resources(requester, member, k)
        self._set(key, RESOURCES, [(r.rid, r.creator, r.wall) for r in rows], token)
        return rows

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        key = b"vcr:%d" % rid
        hit, token = self._get(key, COMMENTS)
        if hit is not None:
            return [CommentRow(*r) for r in hit]
        rows = self.db.view_comments(requester, rid)
        self._set(key, COMMENTS, [(r.rid, r.mid, r.commenter, r.text) for r in rows], token)
        return rows

    # -- writes: the database first, then the keys the paper lists --------------------
    def invite_friend(self, inviter: int, invitee: int) -> None:
        self.db.invite_friend(inviter, invitee)
        self._drop(_request_keys(invitee))

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        self.db.accept_friend_request(inviter, invitee)
        self._drop((*_friendship_keys(invitee, inviter), b"vfr:%d" % invitee))

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self.db.reject_friend_request(inviter, invitee)
        self._drop(_request_keys(invitee))

    def thaw_friendship(self, member: int, friend: int) -> None:
        self.db.thaw_friendship(member, friend)
        self._drop(_friendship_keys(member, friend))

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        self.db.post_comment(commenter, rid, mid, text)
        self._drop((b"vcr:%d" % rid,))

    def delete_comment(self, rid: int, mid: int) -> None:
        self.db.delete_comment(rid, mid)
        self._drop((b"vcr:%d" % rid,))

    def close(self) -> None:
        self.cache.close()
        self.db.close()
