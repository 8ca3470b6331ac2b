"""The results store's file as untrusted input: its schema version, its pages, its rows.

A store is a file a user names, copies and keeps across bgbench versions: it may be from
a newer bgbench (refused before anything is created or altered in it), not SQLite at all,
damaged (pages that do not read), or hold rows that are not the JSON bgbench wrote. Each
is one line naming the file (and the row), never a traceback.
"""

import json
import sqlite3
import struct
import zlib
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from hdrh.codec import HdrCookieException, HdrHistogramSettingsException, HdrLengthException

from bgbench.coordinator.storage.location import Location
from bgbench.errors import SystemFault, UserError
from bgbench.inputs import check_regular

# PRAGMA user_version of a store this bgbench writes. 0: a store from before the marker
# (migrated in place); 2: cwd and workload columns. A newer bgbench writes a larger one:
# raise it with every change to results.SCHEMA that an older bgbench could not read.
SCHEMA_VERSION = 2
T = TypeVar("T")
# What a row that does not hold what bgbench wrote raises on its way to a figure.
MALFORMED = (
    LookupError, TypeError, ValueError, AttributeError, ArithmeticError, RuntimeError,
    zlib.error, struct.error, HdrCookieException, HdrLengthException,
    HdrHistogramSettingsException,
)  # fmt: skip
# What a full disk or a failing device says: the machine's fault, not the store's.
_INFRASTRUCTURE = ("disk i/o error", "database or disk is full", "database is locked")


class StoreFault(SystemFault):
    """The store could not be written or read for a reason of the machine's (a full disk,
    an I/O error, a lock held too long), not because of what it holds."""

    def __init__(self, path: Location, reason: str) -> None:
        super().__init__(f"results store {path}: {reason}")
        self.reason = reason


def damaged(path: Path, exc: sqlite3.Error | UnicodeDecodeError) -> Exception:
    """The one-line error for an SQLite error while using the store at `path`."""
    text = printable(str(exc) or type(exc).__name__)
    if any(s in text.lower() for s in _INFRASTRUCTURE):
        return StoreFault(path, text)
    return UserError(
        f"results store {path} cannot be read ({text}): it is damaged or not a bgbench "
        "results store; restore it from a copy or give --results another directory"
    )


@contextmanager
def guarded(path: Path) -> Iterator[None]:
    """SQLite errors inside as one line naming the store."""
    try:
        yield
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # text that is not UTF-8: damaged
        raise damaged(path, exc) from None


@contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """The store opened read-only (nothing created or changed), its version checked."""
    check_regular(path, "results store")
    with guarded(path):
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=30)
        db.row_factory = sqlite3.Row
        with closing(db):
            refuse_newer(path, db)
            yield db


def refuse_newer(path: Path, db: sqlite3.Connection) -> int:
    """The store's schema version; a UserError when a newer bgbench made it."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise UserError(
            f"results store {path} was made by a newer bgbench (schema {version} > "
            f"{SCHEMA_VERSION}): use that bgbench, or give --results another directory"
        )
    return version


def check_before_writing(path: Path) -> int | None:
    """The schema version of an existing store (None: there is none yet), once it is a
    regular file this bgbench's schema can hold: read before anything is created or
    altered in it."""
    if not path.exists() and not path.is_symlink():
        return None
    with read_only(path) as db:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return refuse_newer(path, db)


def loads(text: str | bytes | None, path: Location, where: str, default: Any = None) -> Any:
    """A JSON column of a row; one line naming the store and the row when it is not JSON."""
    if text is None or text == "":
        return default
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise bad_row(path, where, f"is not JSON ({exc})") from None


def bad_row(path: Location, where: str, what: str) -> UserError:
    return UserError(
        f"results store {path}: {printable(where)} {printable(what)}: the row is damaged"
    )


def printable(text: str, limit: int = 300) -> str:
    """Text from a damaged store as part of one line: control characters escaped, bounded."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:limit])
    return shown + ("..." if len(text) > limit else "")


def checked(path: Location, where: str, build: Callable[..., T], *args: Any) -> T:
    """build(*args) from rows of the store, or one line naming the store and the row."""
    try:
        return build(*args)
    except MALFORMED as exc:
        raise bad_row(path, where, f"does not hold what bgbench writes ({exc!r:.200})") from None


def json_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"a JSON {type(value).__name__}, not an object")
    return value
