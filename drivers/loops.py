"""One client or pool per event loop: an asynchronous driver's connections belong to the loop
that opened them (AsyncMongoClient, httpx.AsyncClient, asyncpg's and asyncmy's pools), and a
binding may serve several loops (a load process runs one; tests run several)."""

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

from bgbench.errors import StoreError

T = TypeVar("T")


class PerLoop(Mapping[asyncio.AbstractEventLoop, T]):
    """The running loop's client, made on first use by `make`; read as a mapping of the
    loops that have one to their client."""

    def __init__(self, make: Callable[[], T]) -> None:
        self.make = make
        self.clients: dict[asyncio.AbstractEventLoop, T] = {}

    def __getitem__(self, loop: asyncio.AbstractEventLoop) -> T:
        return self.clients[loop]

    def __iter__(self) -> Iterator[asyncio.AbstractEventLoop]:
        return iter(self.clients)

    def __len__(self) -> int:
        return len(self.clients)

    def get_or_make(self) -> T:
        loop = asyncio.get_running_loop()
        client = self.clients.get(loop)
        if client is None:
            client = self.clients[loop] = self.make()
        return client

    def pop(self) -> T | None:
        """The running loop's client, forgotten (the caller closes it on this loop)."""
        return self.clients.pop(asyncio.get_running_loop(), None)

    def clear(self) -> None:
        """Forget every loop's client (each is closed by pop() on its own loop)."""
        self.clients.clear()


class LoopPools(ABC):
    """One connection pool per event loop, for an asynchronous SQL driver (asyncpg, asyncmy).

    A connection belongs to the loop that made it, and a load process runs one loop (tests
    run several): a binding keeps a pool per loop, made by the first socialite that asks on
    that loop while the others wait for it. Subclasses make, acquire from and close their
    driver's pools; a failure is a StoreError naming the store and where it is.
    """

    store = "the store"  # in errors: "no PostgreSQL pool at host:port/db"

    def __init__(self, where: str, max_size: int, timeout_s: float) -> None:
        self.where = where  # host:port/db, for errors
        self.max_size = max_size
        self.timeout_s = timeout_s
        self._pools: dict[asyncio.AbstractEventLoop, asyncio.Future[Any]] = {}

    @abstractmethod
    async def _create(self) -> Any:
        """A new pool of the driver's, on the running loop, within timeout_s."""

    @abstractmethod
    def _acquire_from(self, pool: Any) -> Awaitable[Any]:
        """A connection of `pool`, within timeout_s (TimeoutError past it)."""

    @abstractmethod
    async def _close(self, pool: Any) -> None:
        """Close `pool` gracefully (bounded by the caller; terminated past timeout_s)."""

    @abstractmethod
    def _message(self, exc: BaseException) -> str:
        """One line of the driver's error, never a password."""

    async def acquire(self) -> tuple[Any, Any]:
        """A connection of the running loop's pool, and the pool it goes back to."""
        pool = await self.pool()
        try:
            con = await self._acquire_from(pool)
        except TimeoutError:
            raise StoreError(
                f"no {self.store} connection within {self.timeout_s:g} s: the pool's "
                f"{self.max_size} (pool_max) are all taken, or {self.where} does not answer"
            ) from None
        except Exception as exc:
            raise StoreError(
                f"no {self.store} connection to {self.where}: {self._message(exc)}"
            ) from None
        return con, pool

    async def pool(self) -> Any:
        loop = asyncio.get_running_loop()
        made = self._pools.get(loop)
        if made is not None:
            return await made
        made = self._pools[loop] = loop.create_future()
        try:
            pool = await self._create()
        except Exception as exc:
            del self._pools[loop]
            error = StoreError(f"no {self.store} pool at {self.where}: {self._message(exc)}")
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
            await asyncio.wait_for(self._close(pool), self.timeout_s)
        except Exception:
            pool.terminate()

    def clear(self) -> None:
        """Forget every loop's pool (each is closed by aclose() on its own loop)."""
        self._pools.clear()
