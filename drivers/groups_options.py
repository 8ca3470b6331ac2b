"""The options of a workload's bindings over entity groups (groups.py) on HBase, MongoDB
and Cassandra: the driver's options and the SDK's concurrency_control mixin. These
stores offer only the optimistic choice here (a version compare-and-set on the group):
"pessimistic" is refused when the settings are checked. A workload's options subclass
these (naming its database or keyspace). Light: no driver library is imported."""

from typing import ClassVar

from pydantic import Field, model_validator

from bgbench.drivers.cassandra_options import CassandraOptions
from bgbench.drivers.hbase_options import HBaseOptions
from bgbench.drivers.mongodb_options import MongoOptions
from bgbench.sdk.transactions import ConcurrencyControl, ConcurrencyControlOptions

__all__ = [
    "KEYSPACE",
    "CassandraGroupOptions",
    "HBaseGroupOptions",
    "MongoGroupOptions",
    "OptimisticOnly",
]

OPTIMISTIC_ONLY = (
    "concurrency_control: {store} offers only optimistic here (a compare-and-set on the "
    "group's version); pessimistic needs locks it does not have"
)
KEYSPACE = r"^[A-Za-z][A-Za-z0-9_]{0,47}$"


class OptimisticOnly(ConcurrencyControlOptions):
    store_name: ClassVar[str] = "this store"

    concurrency_control: ConcurrencyControl = Field(
        "optimistic", description="optimistic only: compare-and-set on the group's version"
    )

    @model_validator(mode="after")
    def _optimistic(self) -> "OptimisticOnly":
        if self.concurrency_control != "optimistic":
            raise ValueError(OPTIMISTIC_ONLY.format(store=self.store_name))
        return self


class HBaseGroupOptions(HBaseOptions, OptimisticOnly):
    store_name: ClassVar[str] = "HBase"


class MongoGroupOptions(MongoOptions, OptimisticOnly):
    store_name: ClassVar[str] = "MongoDB"


class CassandraGroupOptions(CassandraOptions, OptimisticOnly):
    store_name: ClassVar[str] = "Cassandra"
