"""The bank's stores as specs, the entry points of "bgbench.bank_stores": light, so the
coordinator checks options and sizes load processes without importing a binding."""

from pydantic import Field

from bgbench import sdk
from bgbench.drivers.postgres_options import PostgresOptions
from bgbench.drivers.sqlite_options import SQLiteOptions


class BankSQLiteOptions(SQLiteOptions):
    path: str = Field("bgbench-data/bank.sqlite", description="database file, shared")


SQLITE = sdk.StoreSpec(
    "sqlite", "bgbench_bank.stores:SQLiteBinding", BankSQLiteOptions, embedded=True,
    file_options=("path",),
)  # fmt: skip
POSTGRES = sdk.StoreSpec("postgres", "bgbench_bank.stores:PostgresBinding", PostgresOptions)
