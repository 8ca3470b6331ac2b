"""One client per event loop: an asynchronous driver's connections belong to the loop that
opened them (AsyncMongoClient, httpx.AsyncClient), and a binding may serve several loops
(a load process runs one; tests run several)."""

import asyncio
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

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
