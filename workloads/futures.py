"""Completing an asyncio future from a driver's answer, on the future's own loop.

Drivers with their own I/O thread (cassandra-driver) call back there; a binding posts
these with loop.call_soon_threadsafe. A future already done was cancelled at the end of
a run: the late answer is dropped.
"""

import asyncio
from typing import Any


def resolve(fut: "asyncio.Future[Any]", value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def reject(fut: "asyncio.Future[Any]", exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


class DriverCallbacks:
    """Base of a connection whose driver answers on its own I/O thread (cassandra-driver's
    ResponseFuture): `_answer(rf)` is an asyncio future on the connection's loop that the
    driver's callbacks complete."""

    __slots__ = ("fail", "future", "ok")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.future = loop.create_future
        post = loop.call_soon_threadsafe

        # try/except rather than contextlib.suppress: these run once per answer.
        def ok(value: Any, fut: "asyncio.Future[Any]") -> None:
            try:  # noqa: SIM105
                post(resolve, fut, value)
            except RuntimeError:  # the loop closed while the call was out
                pass

        def fail(exc: BaseException, fut: "asyncio.Future[Any]") -> None:
            try:  # noqa: SIM105
                post(reject, fut, exc)
            except RuntimeError:
                pass

        self.ok, self.fail = ok, fail

    def _answer(self, rf: Any) -> "asyncio.Future[Any]":
        fut = self.future()
        rf.add_callback(self.ok, fut)
        rf.add_errback(self.fail, fut)
        return fut
