"""Cassandra through acsylla (asyncio over the C++ driver of DataStax and ScyllaDB): one
session per event loop for a binding's socialites, whose answers come back on that loop
without a Python I/O thread in between. Measured on View Profile against
cassandra-driver's execute_async bridged to asyncio (benchmarks/nosql_drivers.py), it
costs a quarter to a tenth of the client CPU per call. Schema, loading and read-back
stay on cassandra-driver (drivers/cassandra.py).
"""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import acsylla  # type: ignore[import-untyped]

from bgbench.drivers.cassandra_options import CassandraOptions
from bgbench.errors import StoreError

__all__ = ["ERRORS", "LoopSessions", "consistency", "logged_batch"]

ERRORS = (acsylla.errors.CassException,)

Prepared = TypeVar("Prepared")


def consistency(name: str) -> Any:
    """acsylla's consistency level of a name (ONE, QUORUM...)."""
    return acsylla.Consistency[name]


def logged_batch(level: Any) -> Any:
    batch = acsylla.create_batch_logged()
    batch.set_consistency(level)
    return batch


class LoopSessions(Generic[Prepared]):
    """The running loop's session and what `prepare(session)` made of it (a workload's
    prepared statements), opened by the first socialite of that loop to connect; the
    others connecting meanwhile wait for the same opening."""

    def __init__(
        self, options: CassandraOptions, prepare: Callable[[Any], Awaitable[Prepared]]
    ) -> None:
        self.options = options
        self.prepare = prepare
        self.opening: dict[asyncio.AbstractEventLoop, asyncio.Task[tuple[Any, Prepared]]] = {}

    async def _open(self) -> tuple[Any, Prepared]:
        o = self.options
        # "critical": not its notice, logged as an error on every connection, that Cassandra
        # has no shards (ScyllaDB has); a failed call raises, and is counted, as before.
        # "fallthrough": the server's refusal reaches the task as itself (Unavailable, a
        # read or write timeout: drivers/cassandra_errors.py). The default policy tries the
        # next host on Unavailable and, with none left, raises a bare "no hosts available"
        # that has lost what the server said (cassandra-driver's NoHostAvailable keeps it).
        cluster = acsylla.create_cluster(
            o.hosts, port=o.port, connect_timeout=o.timeout_s, request_timeout=o.timeout_s,
            log_level="critical", retry_policy="fallthrough",
        )  # fmt: skip
        try:
            session = await cluster.create_session(keyspace=o.keyspace)
        except ERRORS as exc:
            raise StoreError(f"cannot reach Cassandra at {o.where()}: {exc}") from None
        try:
            return session, await self.prepare(session)
        except BaseException:
            await session.close()
            raise

    async def get(self) -> tuple[Any, Prepared]:
        """(session, prepared statements) of the running loop."""
        loop = asyncio.get_running_loop()
        opening = self.opening.get(loop)
        if opening is None:
            opening = self.opening[loop] = loop.create_task(self._open())
        try:
            return await asyncio.shield(opening)
        except BaseException:
            if opening.done() and self.opening.get(loop) is opening:
                del self.opening[loop]  # a failed opening is tried again by the next caller
            raise

    async def close(self) -> None:
        """Close the running loop's session (every call on it has ended)."""
        opening = self.opening.pop(asyncio.get_running_loop(), None)
        if opening is None:
            return
        if not opening.done():
            opening.cancel()
        try:
            session, _ = await opening
        except BaseException:
            return
        await session.close()
