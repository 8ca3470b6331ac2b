"""The store options of Micro's bindings. Light: no driver library and no binding is
imported here (specs.py names these).

`MicroTxOptions` is the base every Micro binding's options share: how the binding
isolates a transaction, where its store offers both (store.py). A binding's options
subclass its driver's options and this mixin, e.g.

    class PostgresMicroOptions(PostgresOptions, MicroTxOptions): ...
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bgbench.drivers.sqlite_options import SQLiteOptions as DriverSQLiteOptions
from bgbench.drivers.sqlite_options import Synchronous

ConcurrencyControl = Literal["optimistic", "pessimistic"]

__all__ = ["ConcurrencyControl", "MicroTxOptions", "SQLiteMicroOptions"]


class MicroTxOptions(BaseModel):
    """What every Micro binding's options hold besides its driver's."""

    model_config = ConfigDict(extra="forbid")

    concurrency_control: ConcurrencyControl = Field(
        "pessimistic",
        description="optimistic: read the group's version, buffer the writes, "
        "compare-and-set the version at commit (a moved version aborts as a conflict); "
        "pessimistic: locks (or the store's own multi-statement transaction)",
    )


class SQLiteMicroOptions(DriverSQLiteOptions, MicroTxOptions):
    path: str = Field("bgbench-data/micro.sqlite", description="database file, shared by agents")
    synchronous: Synchronous = "NORMAL"
