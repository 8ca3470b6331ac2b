"""How the tests reach each store binding's real server.

Every binding registered in pyproject.toml must appear here with a context
manager that yields its options against a running server (started by the
test's own setup through deploy/local/ for server stores). A binding missing
here fails the contract suite rather than being skipped.
"""

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def sqlite_server(tmp: Path) -> Iterator[dict]:
    yield {"path": str(tmp / "bg.sqlite")}


@contextlib.contextmanager
def null_server(tmp: Path) -> Iterator[dict]:
    yield {}


SERVERS: dict[str, Callable[[Path], contextlib.AbstractContextManager[dict]]] = {
    "sqlite": sqlite_server,
    "null": null_server,
}
