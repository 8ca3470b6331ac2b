"""CASQL: PostgreSQL with memcached in front (the paper's cache-augmented SQL).

Each read action's result is cached under a key built from the action and its
arguments. Consistency, as a setting:
- invalidation: after it commits, every write invalidates exactly the keys the paper
  lists for it (sections C.1 to C.3), leaving a short-lived marker so a reader that
  computed its value before the commit cannot put it back (Gumball's idea);
- ttl: keys expire after `ttl_s`; writes invalidate nothing, so reads can be stale.
Values are pickled tuples, zlib-compressed as a setting (the paper's Whalin client
compressed). A value over memcached's item limit is served from PostgreSQL, never
cached, and counted. Replies are always awaited (pymemcache defaults to noreply).
"""

import pickle
import zlib
from typing import Annotated, ClassVar, Literal

from pydantic import Field
from pymemcache.client.base import Client

from bgbench.workloads.bg.store import CommentRow, MemberRow, Profile, ResourceRow
from bgbench.workloads.bg.stores.postgres import (
    PostgresBinding,
    PostgresConnection,
    PostgresOptions,
)

ITEM_LIMIT = 1024 * 1024 - 1024  # memcached's default item size, less key and header room
MARKER = b"\x00bgbench:invalidated"


class CasqlOptions(PostgresOptions):
    memcached: str = Field("127.0.0.1:11211", description="host:port of memcached")
    consistency: Literal["invalidation", "ttl"] = "invalidation"
    ttl_s: Annotated[int, Field(ge=1, le=30 * 86400)] = 60
    compress: bool = True
    lease_s: Annotated[
        int, Field(ge=1, le=3600, description="invalidation: how long a write's marker lives")
    ] = 10
    timeout_s: Annotated[float, Field(gt=0)] = 5.0


class CasqlBinding(PostgresBinding):
    name: ClassVar[str] = "casql"
    Options: ClassVar[type] = CasqlOptions  # type: ignore[assignment]

    def __init__(self, options: CasqlOptions) -> None:
        super().__init__(options)
        self.cache_options = options
        self.stats = {"hits": 0, "misses": 0, "oversized": 0, "invalidations": 0}

    def _client(self) -> Client:
        host, port = self.cache_options.memcached.rsplit(":", 1)
        o = self.cache_options
        return Client((host, int(port)), connect_timeout=o.timeout_s, timeout=o.timeout_s,
                      default_noreply=False)  # fmt: skip

    def load_fragment(self, fragment) -> None:  # type: ignore[no-untyped-def]
        super().load_fragment(fragment)
        client = self._client()
        try:
            client.flush_all(noreply=False)  # cached results of the old rows are void
        finally:
            client.close()

    def connect(self) -> "CasqlConnection":  # type: ignore[override]
        base = super().connect()
        return CasqlConnection(base, self._client(), self.cache_options, self.stats)

    def describe(self) -> str:
        client = self._client()
        try:
            version = client.version().decode()
        finally:
            client.close()
        o = self.cache_options
        mode = "invalidation" if o.consistency == "invalidation" else f"TTL {o.ttl_s} s"
        return f"CASQL: {super().describe()} + memcached {version} ({mode})"

    def counters(self) -> dict[str, int]:
        return dict(self.stats)


class CasqlConnection:
    def __init__(self, db: PostgresConnection, cache: Client, o: CasqlOptions, stats: dict) -> None:
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
    def _get(self, key: str) -> tuple[object | None, object]:
        """(value or None on a miss, the token to fill the key with)."""
        raw, cas = self.cache.gets(key)
        if raw is None or raw == MARKER:
            self.stats["misses"] += 1
            return None, (cas if raw == MARKER else None)
        self.stats["hits"] += 1
        return pickle.loads(zlib.decompress(raw) if self.compress else raw), None

    def _set(self, key: str, value: object, token: object) -> None:
        raw = pickle.dumps(value, protocol=5)
        if self.compress:
            raw = zlib.compress(raw, 1)
        if len(raw) > ITEM_LIMIT:
            self.stats["oversized"] += 1  # served from PostgreSQL, never cached
            return
        if not self.invalidate:
            self.cache.set(key, raw, expire=self.ttl, noreply=False)
        elif token is None:
            self.cache.add(key, raw, noreply=False)  # loses to a marker set meanwhile
        else:
            self.cache.cas(key, raw, token, noreply=False)  # only over the marker it saw

    def _drop(self, *keys: str) -> None:
        if self.invalidate:
            self.cache.set_many(dict.fromkeys(keys, MARKER), expire=self.lease, noreply=False)
            self.stats["invalidations"] += len(keys)

    # -- reads -------------------------------------------------------------------
    def view_profile(self, requester: int, member: int) -> Profile:
        key = f"vps:{member}" if requester == member else f"vpb:{member}"
        hit, token = self._get(key)
        if hit is not None:
            return Profile(*hit)  # type: ignore[misc]
        p = self.db.view_profile(requester, member)
        self._set(key, (p.member, p.attributes, p.friend_count, p.resource_count,
                        p.pending_count, p.image), token)  # fmt: skip
        return p

    def _members(self, key: str, load) -> list[MemberRow]:  # type: ignore[no-untyped-def]
        hit, token = self._get(key)
        if hit is not None:
            return [MemberRow(*r) for r in hit]  # type: ignore[attr-defined]
        rows = load()
        self._set(key, [(r.member, r.attributes, r.thumbnail) for r in rows], token)
        return rows  # type: ignore[no-any-return]

    def list_friends(self, requester: int, member: int) -> list[MemberRow]:
        return self._members(f"lf:{member}", lambda: self.db.list_friends(requester, member))

    def view_friend_requests(self, member: int) -> list[MemberRow]:
        return self._members(f"vfr:{member}", lambda: self.db.view_friend_requests(member))

    def view_top_k_resources(self, requester: int, member: int, k: int) -> list[ResourceRow]:
        key = f"vtr:{member}:{k}"
        hit, token = self._get(key)
        if hit is not None:
            return [ResourceRow(*r) for r in hit]  # type: ignore[attr-defined]
        rows = self.db.view_top_k_resources(requester, member, k)
        self._set(key, [(r.rid, r.creator, r.wall) for r in rows], token)
        return rows

    def view_comments(self, requester: int, rid: int) -> list[CommentRow]:
        key = f"vcr:{rid}"
        hit, token = self._get(key)
        if hit is not None:
            return [CommentRow(*r) for r in hit]  # type: ignore[attr-defined]
        rows = self.db.view_comments(requester, rid)
        self._set(key, [(r.rid, r.mid, r.commenter, r.text) for r in rows], token)
        return rows

    # -- writes: the database first, then the keys the paper lists --------------------
    def invite_friend(self, inviter: int, invitee: int) -> None:
        self.db.invite_friend(inviter, invitee)
        self._drop(f"vps:{invitee}", f"vfr:{invitee}")

    def accept_friend_request(self, inviter: int, invitee: int) -> None:
        self.db.accept_friend_request(inviter, invitee)
        a, b = invitee, inviter
        self._drop(f"vps:{a}", f"vps:{b}", f"vpb:{a}", f"vpb:{b}", f"lf:{a}", f"lf:{b}",
                   f"vfr:{a}")  # fmt: skip

    def reject_friend_request(self, inviter: int, invitee: int) -> None:
        self.db.reject_friend_request(inviter, invitee)
        self._drop(f"vps:{invitee}", f"vfr:{invitee}")

    def thaw_friendship(self, member: int, friend: int) -> None:
        self.db.thaw_friendship(member, friend)
        a, b = member, friend
        self._drop(f"lf:{a}", f"lf:{b}", f"vps:{a}", f"vps:{b}", f"vpb:{a}", f"vpb:{b}")

    def post_comment(self, commenter: int, rid: int, mid: int, text: str) -> None:
        self.db.post_comment(commenter, rid, mid, text)
        self._drop(f"vcr:{rid}")

    def delete_comment(self, rid: int, mid: int) -> None:
        self.db.delete_comment(rid, mid)
        self._drop(f"vcr:{rid}")

    def close(self) -> None:
        self.cache.close()
        self.db.close()
