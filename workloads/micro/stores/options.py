"""The store options of Micro's bindings. Light: no driver library and no binding is
imported here (specs.py names these).

Every Micro binding's options take the SDK's `ConcurrencyControlOptions` (how the binding
isolates a transaction, where its store offers both: store.py) besides its driver's,
e.g. `class SQLiteMicroOptions(DriverSQLiteOptions, ConcurrencyControlOptions)`.
"""

from pydantic import Field

from bgbench.drivers.sqlite_options import SQLiteOptions as DriverSQLiteOptions
from bgbench.drivers.sqlite_options import Synchronous
from bgbench.sdk.transactions import ConcurrencyControlOptions

__all__ = ["SQLiteMicroOptions"]


class SQLiteMicroOptions(DriverSQLiteOptions, ConcurrencyControlOptions):
    path: str = Field("bgbench-data/micro.sqlite", description="database file, shared by agents")
    synchronous: Synchronous = "NORMAL"
