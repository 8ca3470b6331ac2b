"""The bank's SQLite and PostgreSQL bindings: one table, the same SQL on both.

A transfer is one UPDATE of both accounts, applied only while the sender's balance and
limit cover the amount: the store decides, atomically. Socialites are threads.
"""

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, ClassVar

import psycopg
from pydantic import BaseModel

from bgbench import sdk
from bgbench_bank.specs import PostgresOptions, SQLiteOptions

SCHEMA = "CREATE TABLE IF NOT EXISTS accounts (id BIGINT PRIMARY KEY, balance BIGINT, lim BIGINT)"
TRANSFER = (
    "UPDATE accounts SET balance = balance + CASE WHEN id = ? THEN -? ELSE ? END WHERE id IN"
    " (?, ?) AND EXISTS (SELECT 1 FROM accounts WHERE id = ? AND balance >= ? AND lim >= ?)"
)


class SQLConnection:  # one socialite's blocking connection; SQL is written with ? parameters
    def __init__(self, conn: Any, parameter: str) -> None:
        self.conn, self.parameter = conn, parameter

    def execute(self, sql: str, *args: int) -> Any:
        return self.conn.execute(sql.replace("?", self.parameter), args)

    def view(self, account: int) -> tuple[int, int]:
        row = self.execute("SELECT balance, lim FROM accounts WHERE id = ?", account).fetchone()
        return int(row[0]), int(row[1])

    def deposit(self, account: int, amount: int) -> None:
        self.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", amount, account)

    def transfer(self, source: int, target: int, amount: int) -> bool:
        args = (source, amount, amount, source, target, source, amount, amount)
        return bool(self.execute(TRANSFER, *args).rowcount > 0)

    def set_limit(self, account: int, limit: int) -> None:
        self.execute("UPDATE accounts SET lim = ? WHERE id = ?", limit, account)

    def close(self) -> None:
        self.conn.close()


class SQLBinding(sdk.BlockingBinding):  # both bindings: the schema, loading
    def connect(self) -> SQLConnection:
        raise NotImplementedError

    def create_schema(self) -> None:
        with closing(self.connect()) as conn:
            conn.execute(SCHEMA)

    def load(self, lo: int, hi: int, balance: int, limit: int, progress: sdk.Progress) -> None:
        with closing(self.connect()) as conn:
            insert = "INSERT INTO accounts VALUES (?, ?, ?)".replace("?", conn.parameter)
            conn.execute("BEGIN")
            conn.execute("DELETE FROM accounts WHERE id >= ? AND id < ?", lo, hi)
            for start in range(lo, hi, 1000):
                rows = [(a, balance, limit) for a in range(start, min(hi, start + 1000))]
                conn.conn.cursor().executemany(insert, rows)
                progress()
            conn.execute("COMMIT")


class SQLiteBinding(SQLBinding):
    name: ClassVar[str] = "sqlite"
    embedded: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = SQLiteOptions
    file_options: ClassVar[tuple[str, ...]] = ("path",)

    def __init__(self, options: SQLiteOptions) -> None:
        self.path = Path(options.path)

    def connect(self) -> SQLConnection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        return SQLConnection(conn, "?")

    def describe(self) -> str:
        return f"SQLite {sqlite3.sqlite_version} (bank accounts in {self.path})"


class PostgresBinding(SQLBinding):
    name: ClassVar[str] = "postgres"
    Options: ClassVar[type[BaseModel]] = PostgresOptions

    def __init__(self, options: PostgresOptions) -> None:
        self.dsn = options.dsn

    def connect(self) -> SQLConnection:
        return SQLConnection(psycopg.connect(self.dsn, autocommit=True), "%s")

    def describe(self) -> str:
        with psycopg.connect(self.dsn) as conn:
            info = conn.info
            return f"PostgreSQL {info.server_version} at {info.host}:{info.port}/{info.dbname}"
