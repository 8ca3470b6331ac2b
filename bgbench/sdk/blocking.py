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
import functools
import inspect
from collections.abc import Coroutine
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


def _methods(protocol: type) -> list[tuple[str, list[str]]]:
    """The protocol's public methods and their parameters' names (self excluded)."""
    methods = []
    for name in dir(protocol):
        method = getattr(protocol, name, None)
        if name.startswith("_") or not callable(method):
            continue
        params = list(inspect.signature(method).parameters.values())[1:]
        if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
            raise TypeError(f"{protocol.__name__}.{name}: only positional parameters are supported")
        methods.append((name, [p.name for p in params]))
    return methods


@functools.cache
def _adapter(protocol: type) -> type:
    """A class whose methods are the protocol's, each an `async def` that calls the wrapped
    blocking connection's method of the same name and returns: written out as a hand-made
    adapter would be (no *args, no lookup by name), since it is on the per-action path."""
    lines = []
    for name, params in _methods(protocol):
        args = ", ".join(params)
        lines += [f"async def {name}(self, {args}):", f"    return self.c.{name}({args})"]
    namespace: dict[str, Any] = {}
    exec("\n".join(lines), namespace)  # identifiers from the protocol's own methods only
    namespace.pop("__builtins__", None)
    return type(f"Blocking{protocol.__name__}", (), {"__slots__": ("c",), **namespace})


def blocking(conn: object, protocol: type) -> Any:
    """`conn` (a blocking connection) through `protocol` (its asynchronous twin: the same
    methods, positional parameters only, as `async def`): each method runs the blocking call
    and returns without suspending, so the engine's thread drives the unit with no event
    loop. Annotate what receives it with the protocol (mypy takes no Protocol class as a
    type[...] argument)."""
    adapter = _adapter(protocol)()
    adapter.c = conn
    return adapter


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
