"""The results store in PostgreSQL (`--results postgresql://...`): the same tables as the
SQLite file, for a team's coordinators to record into one place.

psycopg is imported here only, when a URL is used (the `postgres` extra). The SQL of
results.py and campaign_rows.py runs unchanged: `?` placeholders become `%s`, and rows
read both by name and by position as sqlite3.Row's do. Every TEXT column sorts by bytes
(COLLATE "C"), as SQLite's do, so both stores list in the same order. The schema is made
on first use under an advisory lock (coordinators starting together do not clash), its
version kept in bgbench_meta and checked like the SQLite file's user_version.
"""

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from bgbench import extras
from bgbench.coordinator.configuration.redaction import redact_text
from bgbench.coordinator.storage.location import NoResultsStore, ResultsURL
from bgbench.coordinator.storage.schema import SCHEMA
from bgbench.coordinator.storage.store_file import SCHEMA_VERSION, StoreFault, printable
from bgbench.errors import UserError

_SCHEMA_LOCK = 0x6267_6265_6E63  # pg_advisory_xact_lock key while the schema is made
META = "CREATE TABLE IF NOT EXISTS bgbench_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
PG_SCHEMA = META + re.sub(r" REFERENCES \w+\(\w+\)", "", SCHEMA).replace(
    " REAL", " DOUBLE PRECISION"
).replace(" INTEGER", " BIGINT").replace(" TEXT", ' TEXT COLLATE "C"')
CONNECT_TIMEOUT_S = 10
UNREACHABLE = "cannot connect"


class Row(dict[str, Any]):
    """A row by column name, or by position (as sqlite3.Row)."""

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, int):
            return list(self.values())[key]
        return super().__getitem__(key)


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    names = [d.name for d in cursor.description or []]

    def make(values: Sequence[Any]) -> Row:
        return Row(zip(names, values, strict=True))

    return make


class PgDb:
    """One transaction on the store, with sqlite3.Connection's execute and executemany."""

    def __init__(self, conn: Any) -> None:  # a psycopg.Connection
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Any:
        return self.conn.execute(_sql(sql), tuple(params) or None)

    def executemany(self, sql: str, rows: Any, /) -> Any:
        cursor = self.conn.cursor()
        cursor.executemany(_sql(sql), list(rows))
        return cursor

    def lock(self, key: str) -> None:
        """Hold `key` until the transaction ends (one writer of a rating's seq at a time)."""
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))

    def tables(self) -> set[str]:
        rows = self.conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
        return {str(r[0]) for r in rows}


def _sql(sql: str) -> str:
    return sql.replace("?", "%s")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise UserError(
            "a postgresql:// results store needs the 'postgres' extra, not installed here "
            f"(missing: psycopg): {extras.install_hint('postgres')}"
        ) from None
    return psycopg


def _reason(exc: BaseException) -> str:
    lines = [s for s in str(exc).strip().splitlines() if s.strip()]
    return printable(redact_text(lines[0] if lines else type(exc).__name__))


@contextmanager
def transaction(url: ResultsURL, *, read_only: bool = False) -> Iterator[PgDb]:
    """One transaction on the store, committed when the block ends (rolled back on an
    error). A server that cannot be reached or that fails mid-way is a StoreFault (the
    machine's fault); an SQL error is the store's (one line, its URL redacted)."""
    psycopg = _psycopg()
    try:
        conn = psycopg.connect(
            url.dsn,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name="bgbench",
            row_factory=_row_factory,
        )
    except psycopg.Error as exc:
        raise StoreFault(url, f"{UNREACHABLE} ({_reason(exc)})") from None
    try:
        conn.read_only = read_only
        with conn.transaction():
            yield PgDb(conn)
    except psycopg.OperationalError as exc:
        raise StoreFault(url, _reason(exc)) from None
    except psycopg.Error as exc:
        raise UserError(
            f"results store {url} cannot be used ({_reason(exc)}): it is not a bgbench "
            "results store, or its user lacks a privilege"
        ) from None
    finally:
        conn.close()


def version_of(db: PgDb) -> int | None:
    """The schema version the store records (None: no bgbench tables yet)."""
    if "bgbench_meta" not in db.tables():
        return None
    row = db.execute("SELECT value FROM bgbench_meta WHERE key = 'schema_version'").fetchone()
    try:
        return int(row[0]) if row else None
    except (TypeError, ValueError):
        return -1  # not what bgbench writes: refused below


def refuse_newer(url: ResultsURL, version: int | None) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise UserError(
            f"results store {url} was made by a newer bgbench (schema {version} > "
            f"{SCHEMA_VERSION}): use that bgbench, or give --results another store"
        )
    if version is not None and version < 0:
        raise UserError(f"results store {url}: bgbench_meta holds no schema version it wrote")


def create(url: ResultsURL) -> None:
    """The store's tables made if need be, its version checked (a newer one refused
    before anything is made or altered); one line if the server cannot be reached."""
    try:
        with transaction(url) as db:
            db.conn.execute(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")
            version = version_of(db)
            refuse_newer(url, version)
            if version is None or "ratings" not in db.tables():
                db.conn.execute(PG_SCHEMA)
            if version != SCHEMA_VERSION:
                db.execute(
                    "INSERT INTO bgbench_meta (key, value) VALUES ('schema_version', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(SCHEMA_VERSION),),
                )
    except StoreFault as exc:
        raise UserError(
            f"results store {url} cannot be used ({exc.reason}): check the URL and that "
            "the server is up (the password goes in PGPASSWORD or a pgpass file)"
        ) from None


def writable(url: ResultsURL) -> None:
    """A write tried in the store and undone (a user who may only read fails here)."""
    with transaction(url) as db:
        db.execute("SAVEPOINT probe")
        db.execute("LOCK TABLE ratings, experiments, measurements IN ROW EXCLUSIVE MODE")
        db.execute("ROLLBACK TO SAVEPOINT probe")


def existing(url: ResultsURL) -> None:
    """The store must already hold bgbench's tables (nothing is made looking for one)."""
    with reading(url):
        pass


@contextmanager
def reading(url: ResultsURL) -> Iterator[PgDb]:
    """A read-only transaction on an existing store of this bgbench's schema (or an older
    one); one line if the server cannot be reached or nothing was recorded there."""
    try:
        with transaction(url, read_only=True) as db:
            version = version_of(db)
            if version is None:
                raise NoResultsStore(f"no results store in {url}: nothing was recorded there yet")
            refuse_newer(url, version)
            yield db
    except StoreFault as exc:
        if not exc.reason.startswith(UNREACHABLE):  # it went away mid-way: the machine's
            raise
        raise UserError(
            f"results store {url} cannot be used ({exc.reason}): check the URL and that "
            "the server is up (the password goes in PGPASSWORD or a pgpass file)"
        ) from None
