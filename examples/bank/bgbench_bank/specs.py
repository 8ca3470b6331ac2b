"""The bank's stores as specs, the entry points of "bgbench.bank_stores": light, so the
coordinator checks options and sizes load processes without importing a binding."""

from pydantic import BaseModel, Field

from bgbench import sdk


class SQLiteOptions(BaseModel, extra="forbid"):
    path: str = Field("bgbench-data/bank.sqlite", description="database file, shared")


class PostgresOptions(BaseModel, extra="forbid"):
    dsn: str = Field("dbname=bgbench", description="libpq connection string (URL or key=value)")


SQLITE = sdk.StoreSpec(
    "sqlite", "bgbench_bank.stores:SQLiteBinding", SQLiteOptions, embedded=True,
    file_options=("path",),
)  # fmt: skip
POSTGRES = sdk.StoreSpec("postgres", "bgbench_bank.stores:PostgresBinding", PostgresOptions)
