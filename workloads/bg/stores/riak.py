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

import asyncio
import base64
import contextlib
import json
from typing import Annotated, Any, ClassVar, Literal

import httpcore
import httpx
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

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

QUORUM_WORDS = ("one", "quorum", "all", "default")


def _quorum(value: object) -> int | str:
    """A Riak quorum value: a replica count or one of its words."""
    text = str(value).strip().lower()
    if text.isdigit():
        return int(text)
    if text in QUORUM_WORDS:
        return text
    raise ValueError(f"{value!r} is not a quorum value: use a count or one, quorum, all, default")


Quorum = Annotated[int | str, BeforeValidator(_quorum)]
PRESETS: dict[str, dict[str, Any]] = {
    "quorum": {"r": "quorum", "w": "quorum", "pr": "quorum", "pw": "quorum",
               "notfound_ok": False},
    "noquorum": {"r": 1, "w": 1, "pr": 0, "pw": 0, "notfound_ok": True},
}  # fmt: skip


class RiakOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = "http://127.0.0.1:8098"
    bucket_type: str = Field("default", pattern=r"^[A-Za-z0-9_-]+$")
    bucket_prefix: str = Field("bg_", pattern=r"^[A-Za-z0-9_-]{0,40}$")
    server_name: str = Field("Riak KV", description="what the server is")
    n_val: Annotated[int, Field(ge=1)] = 3
    consistency: Literal["quorum", "noquorum"] = "quorum"
    r: Quorum | None = None
    w: Quorum | None = None
    pr: Quorum | None = None
    pw: Quorum | None = None
    dw: Quorum | None = None
    notfound_ok: bool | None = None
    basic_quorum: bool | None = None
    pool_max: Annotated[int, Field(ge=1)] = 256
    timeout_s: Annotated[float, Field(gt=0)] = 10.0

    def read_params(self) -> dict[str, str]:
        return self._params(("r", "pr", "notfound_ok", "basic_quorum"))

    def write_params(self) -> dict[str, str]:
        return self._params(("w", "dw", "pw"))

    def _params(self, names: tuple[str, ...]) -> dict[str, str]:
        preset = PRESETS[self.consistency]
        out = {}
        for name in names:
            value = getattr(self, name)
            value = preset.get(name) if value is None else value
            if value is not None:
                out[name] = str(value).lower()
        return out


class Riak:
    """The HTTP calls the binding makes, and nothing else."""

    def __init__(self, options: RiakOptions) -> None:
        self.o = options
        self.http = httpx.Client(
            base_url=options.url.rstrip("/"),
            timeout=options.timeout_s,
            limits=httpx.Limits(max_connections=options.pool_max),
        )
        self.reads, self.writes = options.read_params(), options.write_params()

    def _path(self, bucket: str, key: str = "") -> str:
        base = f"/types/{self.o.bucket_type}/buckets/{self.o.bucket_prefix}{bucket}"
        return f"{base}/keys/{key}" if key else base

    def _send(self, method: str, path: str, **kw: Any) -> httpx.Response:
        try:
            return self.http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise StoreError(f"Riak at {self.o.url}: {type(exc).__name__}: {exc}") from None

    def ping(self) -> None:
        r = self._send("GET", "/ping")
        if r.status_code != 200:
            raise StoreError(f"Riak at {self.o.url} answered /ping with {r.status_code}")

    def set_props(self, bucket: str, props: dict) -> None:
        r = self._send("PUT", self._path(bucket) + "/props", json={"props": props})
        if r.status_code not in (200, 204):
            raise StoreError(f"Riak bucket {bucket} props: {r.status_code} {r.text[:200]}")

    def get(self, bucket: str, key: str) -> tuple[Any, str | None]:
        """The JSON value and its vector clock; (None, None) when not found."""
        r = self._send("GET", self._path(bucket, key), params=self.reads)
        if r.status_code == 404:
            return None, None
        if r.status_code != 200:
            raise StoreError(f"Riak GET {bucket}/{key}: {r.status_code} {r.text[:200]}")
        return r.json(), r.headers.get("x-riak-vclock")

    def put(self, bucket: str, key: str, value: Any, vclock: str | None = None) -> None:
        headers = {"content-type": "application/json"}
        if vclock:
            headers["x-riak-vclock"] = vclock
        r = self._send(
            "PUT", self._path(bucket, key), params=self.writes, headers=headers,
            content=json.dumps(value, separators=(",", ":")),
        )  # fmt: skip
        if r.status_code not in (200, 204):
            raise StoreError(f"Riak PUT {bucket}/{key}: {r.status_code} {r.text[:200]}")

    def close(self) -> None:
        self.http.close()


BUCKETS = ("member", "card", "wall", "comments")
JSON_TYPE = {"content-type": "application/json"}
KEEPALIVE_S = 5.0  # how long an idle connection is kept: httpx's default
HTTPCORE_ERRORS = (
    httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError,
    httpcore.ProxyError, httpcore.UnsupportedProtocol, httpcore.ConnectionNotAvailable,
)  # fmt: skip


def _as_httpx(exc: Exception) -> httpx.TransportError:
    """httpcore's error as the httpx error of the same name, as httpx's own transport maps it."""
    for cls in type(exc).__mro__:
        mapped = getattr(httpx, cls.__name__, None)
        if isinstance(mapped, type) and issubclass(mapped, httpx.TransportError):
            return mapped(str(exc))
    return httpx.TransportError(str(exc))


class LoopConnections(httpx.AsyncBaseTransport):
    """The transport of one loop's httpx.AsyncClient: at most `limit` keep-alive HTTP/1.1
    connections to Riak, the idle ones on a stack.

    httpx's default pool (httpcore 1.0's) offers the same idle connection to every request
    queued at one moment; all but one then retry, each pass scanning every connection and
    request: with 16 tasks on a loop, 2.5-3x the client CPU of a call made here. Here a
    request takes the most recently used idle connection, or opens one while fewer than
    `limit` are open, or waits up to the pool timeout as httpx's pool does. Keep-alive
    expiry and dropped-connection checks are httpcore's own (has_expired)."""

    def __init__(self, url: httpx.URL, limit: int) -> None:
        https = url.scheme == "https"
        self.origin = httpcore.Origin(
            url.raw_scheme, url.raw_host, url.port or (443 if https else 80)
        )
        self.ssl_context = httpx.create_ssl_context() if https else None
        self.slots = asyncio.Semaphore(limit)  # requests under way, so at most `limit` open
        self.idle: list[httpcore.AsyncHTTPConnection] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.slots.locked():
            timeout = request.extensions.get("timeout", {}).get("pool")
            try:
                await asyncio.wait_for(self.slots.acquire(), timeout)
            except TimeoutError:
                raise httpx.PoolTimeout(f"no connection free within {timeout} s") from None
        else:
            await self.slots.acquire()  # returns at once
        try:
            conn = await self._connection()
            try:
                response = await conn.handle_async_request(
                    httpcore.Request(
                        request.method,
                        httpcore.URL(
                            scheme=request.url.raw_scheme, host=request.url.raw_host,
                            port=request.url.port, target=request.url.raw_path,
                        ),
                        headers=request.headers.raw, content=request.stream,
                        extensions=request.extensions,
                    )
                )  # fmt: skip
                body = await response.aread()
                await response.aclose()
            except BaseException as exc:
                await self._discard(conn)  # in an unknown state
                if isinstance(exc, HTTPCORE_ERRORS):
                    raise _as_httpx(exc) from exc
                raise
            if conn.is_available():
                self.idle.append(conn)
            else:  # the server closed it
                await self._discard(conn)
        finally:
            self.slots.release()
        return httpx.Response(
            response.status, headers=response.headers, stream=httpx.ByteStream(body),
            extensions=response.extensions,
        )  # fmt: skip

    async def _connection(self) -> httpcore.AsyncHTTPConnection:
        idle = self.idle
        while idle:
            conn = idle.pop()
            if not conn.has_expired():  # past its keep-alive, or closed by the server
                return conn
            await self._discard(conn)
        return httpcore.AsyncHTTPConnection(
            self.origin, ssl_context=self.ssl_context, keepalive_expiry=KEEPALIVE_S
        )

    @staticmethod
    async def _discard(conn: httpcore.AsyncHTTPConnection) -> None:
        with contextlib.suppress(Exception):  # a broken one may fail to close: dropped anyway
            await conn.aclose()

    async def aclose(self) -> None:
        idle, self.idle = self.idle, []
        for conn in idle:
            await self._discard(conn)


class AsyncRiak:
    """Riak's GET and PUT of a key on one event loop: the same requests, with each bucket's
    key path and the quorum query strings built once rather than per call. Its pool's
    limit is pool_max connections, as the blocking client's."""

    def __init__(self, options: RiakOptions) -> None:
        self.url = options.url
        self.pool = LoopConnections(httpx.URL(options.url), options.pool_max)
        self.http = httpx.AsyncClient(
            base_url=options.url.rstrip("/"), timeout=options.timeout_s, transport=self.pool
        )
        base = f"/types/{options.bucket_type}/buckets/{options.bucket_prefix}"
        self.keys = {bucket: f"{base}{bucket}/keys/" for bucket in BUCKETS}
        reads, writes = options.read_params(), options.write_params()
        self.read_query = f"?{httpx.QueryParams(reads)}" if reads else ""
        self.write_query = f"?{httpx.QueryParams(writes)}" if writes else ""

    async def _send(self, method: str, url: str, **kw: Any) -> httpx.Response:
        try:
            return await self.http.request(method, url, **kw)
        except httpx.HTTPError as exc:
            raise StoreError(f"Riak at {self.url}: {type(exc).__name__}: {exc}") from None

    async def get(self, bucket: str, key: str) -> tuple[Any, str | None]:
        """The JSON value and its vector clock; (None, None) when not found."""
        r = await self._send("GET", f"{self.keys[bucket]}{key}{self.read_query}")
        if r.status_code == 404:
            return None, None
        if r.status_code != 200:
            raise StoreError(f"Riak GET {bucket}/{key}: {r.status_code} {r.text[:200]}")
        return json.loads(r.content), r.headers.get("x-riak-vclock")

    async def put(self, bucket: str, key: str, value: Any, vclock: str | None = None) -> None:
        headers = {**JSON_TYPE, "x-riak-vclock": vclock} if vclock else JSON_TYPE
        r = await self._send(
            "PUT", f"{self.keys[bucket]}{key}{self.write_query}", headers=headers,
            content=json.dumps(value, separators=(",", ":")),
        )  # fmt: skip
        if r.status_code not in (200, 204):
            raise StoreError(f"Riak PUT {bucket}/{key}: {r.status_code} {r.text[:200]}")

    async def aclose(self) -> None:
        await self.http.aclose()


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
        self.loop_riaks: dict[asyncio.AbstractEventLoop, AsyncRiak] = {}

    def create_schema(self, db: BGDatabaseConfig) -> None:
        self.riak.ping()
        for bucket in BUCKETS:
            self.riak.set_props(bucket, {"n_val": self.options.n_val, "allow_mult": False})
        self.ready = True

    def use_schema(self, db: BGDatabaseConfig) -> None:
        self.riak.ping()
        self.ready = True

    def load_fragment(self, fragment: Fragment) -> None:
        members = fragment.members.tolist()
        docs = {
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
        comments: dict[int, dict[str, list]] = {r: {} for r in fragment.resources[:, 0].tolist()}
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
        loop = asyncio.get_running_loop()
        riak = self.loop_riaks.get(loop)
        if riak is None:
            riak = self.loop_riaks[loop] = AsyncRiak(self.options)
        return RiakAsyncConnection(riak)

    async def aclose(self) -> None:
        riak = self.loop_riaks.pop(asyncio.get_running_loop(), None)
        if riak is not None:
            await riak.aclose()

    def describe(self) -> str:
        o = self.options
        quorum = {**o.read_params(), **o.write_params()}
        settings = ", ".join(f"{k}={v}" for k, v in quorum.items())
        return f"{o.server_name} at {o.url} (n_val {o.n_val}, {o.consistency}: {settings})"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.loop_riaks.clear()  # a loop's client is closed by aclose() on that loop
        self.riak.close()


def edit_lists(
    doc: dict, what: str, remove: tuple[str, int] | None, add: tuple[str, int] | None
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

    def _member(self, m: int) -> tuple[dict, str | None]:
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

    async def _member(self, m: int) -> tuple[dict, str | None]:
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
