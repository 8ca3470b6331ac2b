"""The bank's SQLite and PostgreSQL bindings: one table, the same SQL on both.

A transfer is one UPDATE of both accounts, applied only while the sender's balance and
limit cover the amount: the store decides, atomically. Socialites are threads. The
connections come from bgbench.drivers (busy timeouts, connect timeouts, errors).
"""

from contextlib import closing
from typing import Any, ClassVar

from pydantic import BaseModel

from bgbench import sdk
from bgbench.drivers import postgres, sqlite
from bgbench.drivers.postgres_options import PostgresOptions
from bgbench_bank import specs

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
    Options: ClassVar[type[BaseModel]] = specs.BankSQLiteOptions
    file_options: ClassVar[tuple[str, ...]] = ("path",)

    def __init__(self, options: specs.BankSQLiteOptions) -> None:
        self.options = options

    def connect(self) -> SQLConnection:
        return SQLConnection(sqlite.open_database(self.options, "journal_mode=WAL"), "?")

    def describe(self) -> str:
        return sqlite.describe(self.options)


class PostgresBinding(SQLBinding):
    name: ClassVar[str] = "postgres"
    Options: ClassVar[type[BaseModel]] = PostgresOptions

    def __init__(self, options: PostgresOptions) -> None:
        self.options = options

    def connect(self) -> SQLConnection:
        return SQLConnection(postgres.connect(self.options), "%s")

    def describe(self) -> str:
        return postgres.describe(self.options)
