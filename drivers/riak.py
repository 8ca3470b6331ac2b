"""Riak KV over its documented HTTP API (httpx): JSON values under plain keys.

Calls used: GET /ping, PUT /types/T/buckets/B/props, GET and PUT
/types/T/buckets/B/keys/K with r, pr, notfound_ok, basic_quorum (reads) and w, dw, pw
(writes) as query parameters. A binding's writes are read-modify-writes carrying the
value's X-Riak-Vclock; buckets are made with allow_mult false, so concurrent writers to
one key resolve by last write wins (a lost update is a real Riak outcome).

`Riak` is the blocking client (schema, loading, read-back); `AsyncRiak` the client of one
event loop (socialites), over `LoopConnections`. Every HTTP error is the store's fault.
"""

import asyncio
import contextlib
import json
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from bgbench.drivers.loops import PerLoop
from bgbench.drivers.riak_options import RiakOptions
from bgbench.errors import StoreError

__all__ = ["AsyncRiak", "LoopConnections", "PerLoop", "Riak", "RiakOptions"]


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

    def set_props(self, bucket: str, props: dict[str, Any]) -> None:
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

    def make_buckets(self, buckets: Iterable[str]) -> None:
        """The server answers, then each bucket with the options' n_val and allow_mult false
        (concurrent writers to one key resolve by last write wins)."""
        self.ping()
        for bucket in buckets:
            self.set_props(bucket, {"n_val": self.o.n_val, "allow_mult": False})

    def close(self) -> None:
        self.http.close()


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

    def __init__(self, options: RiakOptions, buckets: Iterable[str]) -> None:
        self.url = options.url
        self.pool = LoopConnections(httpx.URL(options.url), options.pool_max)
        self.http = httpx.AsyncClient(
            base_url=options.url.rstrip("/"), timeout=options.timeout_s, transport=self.pool
        )
        base = f"/types/{options.bucket_type}/buckets/{options.bucket_prefix}"
        self.keys = {bucket: f"{base}{bucket}/keys/" for bucket in buckets}
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
