"""The store options of Auction's bindings. Light: no driver library and no binding is
imported here (specs.py names these).

Every Auction binding's options take the SDK's `ConcurrencyControlOptions`:
`concurrency_control`, "optimistic" or "pessimistic", where the store offers both
(store.py says what each means per store).
"""

from pydantic import Field

from bgbench.drivers.sqlite_options import SQLiteOptions as DriverSQLiteOptions
from bgbench.drivers.sqlite_options import Synchronous
from bgbench.sdk.transactions import ConcurrencyControlOptions

__all__ = ["SQLiteOptions"]


class SQLiteOptions(DriverSQLiteOptions, ConcurrencyControlOptions):
    """SQLite: pessimistic takes the database's write lock at BEGIN (BEGIN IMMEDIATE,
    waiting up to busy_timeout_ms); optimistic reads in a deferred transaction and
    upgrades at its first write, which fails as a conflict if another connection
    committed since the read."""

    path: str = Field("bgbench-data/auction.sqlite", description="database file, shared by agents")
    synchronous: Synchronous = "NORMAL"
