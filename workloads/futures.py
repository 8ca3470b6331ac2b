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
