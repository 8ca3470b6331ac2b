"""The options of Auction's bindings over entity groups on NoSQL stores (groupkv.py): the
driver's options and the concurrency_control mixin. These stores offer only the
optimistic choice here (a version compare-and-set on the group): "pessimistic" is
refused when the settings are checked. Light: no driver library is imported."""

from typing import ClassVar

from pydantic import Field, model_validator

from bgbench.drivers.cassandra_options import CassandraOptions
from bgbench.drivers.hbase_options import HBaseOptions
from bgbench.drivers.mongodb_options import MongoOptions
from bgbench.workloads.auction.store import ConcurrencyControl
from bgbench.workloads.auction.stores.options import ConcurrencyControlOptions

__all__ = ["CassandraAuctionOptions", "HBaseAuctionOptions", "MongoAuctionOptions"]

OPTIMISTIC_ONLY = (
    "concurrency_control: {store} offers only optimistic here (a compare-and-set on the "
    "group's version); pessimistic needs locks it does not have"
)


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


class HBaseAuctionOptions(HBaseOptions, OptimisticOnly):
    store_name: ClassVar[str] = "HBase"


class MongoAuctionOptions(MongoOptions, OptimisticOnly):
    store_name: ClassVar[str] = "MongoDB"
    database: str = "bgbench_auction"


class CassandraAuctionOptions(CassandraOptions, OptimisticOnly):
    store_name: ClassVar[str] = "Cassandra"
    keyspace: str = Field("bgbench_auction", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
