"""The store options of Auction's bindings. Light: no driver library and no binding is
imported here (specs.py names these).

`ConcurrencyControlOptions` is the mixin every transactional binding's options take
(options_sql.py and options_kv.py reuse it): `concurrency_control`, "optimistic" or
"pessimistic", where the store offers both (store.py says what each means per store).
"""

from pydantic import BaseModel, ConfigDict, Field

from bgbench.drivers.sqlite_options import SQLiteOptions as DriverSQLiteOptions
from bgbench.drivers.sqlite_options import Synchronous
from bgbench.workloads.auction.store import ConcurrencyControl

__all__ = ["ConcurrencyControlOptions", "SQLiteOptions"]


class ConcurrencyControlOptions(BaseModel):
    """How a binding isolates one transaction attempt on a group."""

    model_config = ConfigDict(extra="forbid")

    concurrency_control: ConcurrencyControl = Field(
        "pessimistic",
        description="pessimistic (locks taken as the transaction reads) or optimistic "
        "(read, then commit only if the group did not change: a conflict aborts)",
    )


class SQLiteOptions(DriverSQLiteOptions, ConcurrencyControlOptions):
    """SQLite: pessimistic takes the database's write lock at BEGIN (BEGIN IMMEDIATE,
    waiting up to busy_timeout_ms); optimistic reads in a deferred transaction and
    upgrades at its first write, which fails as a conflict if another connection
    committed since the read."""

    path: str = Field("bgbench-data/auction.sqlite", description="database file, shared by agents")
    synchronous: Synchronous = "NORMAL"
