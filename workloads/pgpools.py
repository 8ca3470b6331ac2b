"""One asyncpg pool per event loop, for every workload's PostgreSQL binding.

An asyncpg connection belongs to the loop that made it, and a load process runs one loop
(tests run several): a binding keeps a pool per loop, made by the first socialite that
asks on that loop while the others wait for it. Statements stay prepared for the
connection's life (max_cached_statement_lifetime=0): the hot ones are few.
"""

import asyncio
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from bgbench.errors import StoreError


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class LoopPools:
    def __init__(
        self,
        dsn: str,
        where: str,
        max_size: int,
        timeout_s: float,
        server_settings: dict[str, str],
    ) -> None:
        self.dsn = dsn
        self.where = where  # host:port/db, for errors
        self.max_size = max_size
        self.timeout_s = timeout_s
        self.server_settings = server_settings
        self._pools: dict[asyncio.AbstractEventLoop, asyncio.Future[Any]] = {}

    async def acquire(self) -> tuple[Any, Any]:
        """A connection of the running loop's pool, and the pool it goes back to."""
        pool = await self.pool()
        try:
            con = await pool.acquire(timeout=self.timeout_s)
        except TimeoutError:
            raise StoreError(
                f"no PostgreSQL connection within {self.timeout_s:g} s: the pool's "
                f"{self.max_size} (pool_max) are all taken, or {self.where} does not answer"
            ) from None
        except Exception as exc:
            raise StoreError(
                f"no PostgreSQL connection to {self.where}: {first_line(exc)}"
            ) from None
        return con, pool

    async def pool(self) -> Any:
        loop = asyncio.get_running_loop()
        made = self._pools.get(loop)
        if made is not None:
            return await made
        made = self._pools[loop] = loop.create_future()
        try:
            pool = await asyncpg.create_pool(
                self.dsn,
                min_size=0,
                max_size=self.max_size,
                timeout=self.timeout_s,
                max_cached_statement_lifetime=0,
                server_settings=self.server_settings,
            )
        except Exception as exc:
            del self._pools[loop]
            error = StoreError(f"no PostgreSQL pool at {self.where}: {first_line(exc)}")
            made.set_exception(error)  # for the tasks that wait on it, if any
            made.exception()  # retrieved: asyncio logs nothing when none waits
            raise error from None
        except BaseException:
            del self._pools[loop]
            made.cancel()
            raise
        made.set_result(pool)
        return pool

    async def aclose(self) -> None:
        """Close the running loop's pool; if its server stopped answering, drop it."""
        made = self._pools.pop(asyncio.get_running_loop(), None)
        if made is None or not made.done() or made.cancelled() or made.exception():
            return
        pool = made.result()
        try:
            await asyncio.wait_for(pool.close(), self.timeout_s)
        except Exception:
            pool.terminate()

    def clear(self) -> None:
        """Forget every loop's pool (each is closed by aclose() on its own loop)."""
        self._pools.clear()
