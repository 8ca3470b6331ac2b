"""SQLite (the standard library's sqlite3): open a database file, check it on first
contact, and take the file lock that lets one process at a time change the schema or load.

Connections are autocommit (isolation_level None) with a busy timeout. A path that cannot
hold a database is the user's to fix, named as `store.options.path`. `transaction_attempt`
runs one attempt of a transactional binding's transaction.
"""

import contextlib
import fcntl
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from bgbench.drivers.sqlite_options import SQLiteOptions
from bgbench.errors import UserError
from bgbench.sdk.transactions import Abort, AbortCause

__all__ = [
    "SQLiteOptions",
    "bad_path",
    "busy",
    "describe",
    "exclusive",
    "first_open",
    "open_database",
    "transaction_attempt",
]

LOCK_POLL_S = 0.05  # how often a process waiting for the write lock tries again
BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED")
R = TypeVar("R")


def _no_beat() -> None:
    pass


def open_database(
    options: SQLiteOptions, *pragmas: str, check_same_thread: bool = True
) -> sqlite3.Connection:
    """A connection to the options' file with their busy timeout and cache, then `pragmas`
    (e.g. "synchronous=NORMAL"). The file's own directory is made (the default is
    relative); a deeper missing path is more likely a typo than a wish."""
    path = Path(options.path)
    path.parent.mkdir(exist_ok=True)
    conn = sqlite3.connect(
        path,
        isolation_level=None,
        timeout=options.busy_timeout_ms / 1000,
        check_same_thread=check_same_thread,
    )
    conn.execute(f"PRAGMA busy_timeout={options.busy_timeout_ms}")
    for pragma in pragmas:
        conn.execute(f"PRAGMA {pragma}")
    conn.execute(f"PRAGMA cache_size=-{options.cache_size_kb}")
    return conn


def bad_path(path: str | Path, reason: str) -> UserError:
    return UserError(
        f"store.options.path: cannot use {path} as a SQLite database ({reason}): "
        "point it at a database file, or a new one, in an existing writable directory"
    )


def first_open(
    options: SQLiteOptions, *pragmas: str, check_same_thread: bool = True
) -> sqlite3.Connection:
    """The first contact: a path that cannot hold a database is the user's to fix."""
    path = Path(options.path)
    conn = None
    try:
        conn = open_database(options, *pragmas, check_same_thread=check_same_thread)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except (NotADirectoryError, FileExistsError):  # FileExistsError: mkdir where a file is
        raise bad_path(path, f"{path.parent} is not a directory") from None
    except OSError as exc:
        what = f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc)
        raise bad_path(path, what) from None
    except sqlite3.DatabaseError as exc:
        if conn is not None:
            conn.close()
        if getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            raise  # another process holds it: not the path's fault
        raise bad_path(path, str(exc)) from None


@contextmanager
def exclusive(path: str | Path, waiting: Callable[[], None] = _no_beat) -> Iterator[None]:
    """One process at a time. SQLite has one writer, and a statement that reads before it
    writes (a journal-mode switch, PRAGMA optimize) fails at once, busy timeout or not,
    when another connection wrote meanwhile. `waiting` is called while another process
    holds the lock (a load waiting its turn is alive, not hung)."""
    path = Path(path)
    lock = path.with_name(path.name + ".lock")
    with open(lock, "a") as f:
        while True:  # released when the file closes, or the process dies
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waiting()
                time.sleep(LOCK_POLL_S)
        yield


def describe(options: SQLiteOptions) -> str:
    return f"SQLite {sqlite3.sqlite_version} (file {options.path})"


def busy(exc: BaseException) -> bool:
    """Whether `exc` is SQLite refusing for a lock (busy, locked, a stale snapshot)."""
    return isinstance(exc, sqlite3.OperationalError) and str(
        getattr(exc, "sqlite_errorname", "")
    ).startswith(BUSY)


def transaction_attempt(
    conn: sqlite3.Connection, begin: str, body: Callable[[sqlite3.Connection], R], cause: AbortCause
) -> R:
    """`body` in one transaction opened by `begin` ("BEGIN" or "BEGIN IMMEDIATE"), then
    COMMIT; anything raised rolls it back, and a busy database raises sdk.Abort(cause)."""
    try:
        conn.execute(begin)
        answer = body(conn)
        conn.execute("COMMIT")
        return answer
    except BaseException as exc:
        if conn.in_transaction:
            # a failed rollback leaves the connection beyond use; the first error says why
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        if busy(exc):
            raise Abort(cause, str(exc)) from exc
        raise
