"""Blocking store connections under the asynchronous units, written once.

Every unit of a workload is a coroutine. A binding whose driver only blocks declares
`concurrency = "threads"`: each socialite is then an OS thread that runs its units with
`run_blocking`, without an event loop, so a unit over a blocking connection must never
suspend (awaiting anything but the connection's own methods, asyncio.sleep included,
would need a loop the thread does not have; run_blocking refuses it). `blocking(conn,
AsyncProtocol)` makes the asynchronous view of a blocking connection whose methods
return at once; `connection_for(binding, conn, AsyncProtocol)` picks the view a
workload's player needs for either concurrency. Think times go through the unit
context's `think`/`pause`, which the engine makes right for threads and tasks.

Tests and tools use an asynchronous binding from blocking code through a `LoopBridge`
(`blocking_connection` picks it when needed).
"""

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (a unit over a `blocking` connection) to its end
    in the calling thread, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a unit over a blocking connection suspended")


def _method_names(protocol: type) -> list[str]:
    return [
        name
        for name in dir(protocol)
        if not name.startswith("_") and callable(getattr(protocol, name, None))
    ]


def _forward(method: Callable[..., T]) -> Callable[..., Coroutine[Any, Any, T]]:
    async def call(*args: Any) -> T:
        return method(*args)

    return call


class _Blocking:
    """A blocking connection seen through an asynchronous protocol (see `blocking`)."""

    def __init__(self, conn: object, names: list[str]) -> None:
        self.blocking_conn = conn
        for name in names:
            setattr(self, name, _forward(getattr(conn, name)))


def blocking(conn: object, protocol: type) -> Any:
    """`conn` (a blocking connection) through `protocol` (its asynchronous twin: the same
    methods as `async def`): each method runs the blocking call and returns without
    suspending, so the engine's thread drives the unit with no event loop. Made once per
    socialite runner; annotate what receives it with the protocol (mypy cannot take a
    Protocol class as a type[...] argument)."""
    return _Blocking(conn, _method_names(protocol))


def connection_for(binding: Any, conn: Any, protocol: type) -> Any:
    """The asynchronous view of a connection the binding made for one runner: itself on an
    event loop (concurrency "asyncio"), `blocking(conn, protocol)` in a thread."""
    if getattr(binding, "concurrency", "threads") == "asyncio":
        return conn
    return blocking(conn, protocol)


class LoopBridge:
    """An asynchronous connection used from blocking code, on a private event loop (tests,
    tools): each call runs to completion. One bridge per thread."""

    def __init__(self, binding: Any) -> None:
        self.binding = binding
        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(binding.connect_async())

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.conn, name)

        def call(*args: Any) -> Any:
            return self.loop.run_until_complete(method(*args))

        return call

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.conn.close())
            self.loop.run_until_complete(self.binding.aclose())
        finally:
            self.loop.close()


def blocking_connection(binding: Any) -> Any:
    """A blocking connection to any binding: its own, or an asynchronous one bridged."""
    if getattr(binding, "concurrency", "threads") == "threads":
        return binding.connect()
    return LoopBridge(binding)
