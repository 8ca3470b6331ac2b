"""Closing a run's connections: together, and within a bound once the store stopped
answering. One by one, each close of a connection to a frozen PostgreSQL waited out its
driver's timeout (10 s each): the run ended 56 s after its end where 30 s is promised."""

import asyncio
from typing import Any

from bgbench.sdk import Fragment, Timer

CLOSE_BOUND_S = 2.0  # closing the connections of a run the store stopped answering


async def close_all(conns: list[Timer[Any]], fragment: Fragment, bound: float | None) -> None:
    """Close every connection at once; with `bound`, give up after that many seconds (the
    fragment's state is then uncertain: reloaded before the next run)."""

    async def close(tc: Timer[Any]) -> None:
        try:
            await tc.conn.close()
        except Exception:  # a connection to a store that stopped answering
            fragment.uncertain = fragment.uncertain or bool(tc.in_call)

    try:
        await asyncio.wait_for(asyncio.gather(*(close(tc) for tc in conns)), bound)
    except TimeoutError:
        fragment.uncertain = True  # their writes' outcomes are unknown
