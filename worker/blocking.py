"""Driving asynchronous connections from blocking code, and blocking ones from coroutines.

The engine writes every action once, as a coroutine. Over a blocking connection wrapped
so its methods never suspend, a thread runs those coroutines with `run_blocking`,
without an event loop; tests and tools use an asynchronous binding from blocking code
through a `LoopBridge`.
"""

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (a unit over a `Blocking` connection) to its end
    in the calling thread, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a unit over a blocking connection suspended")


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
