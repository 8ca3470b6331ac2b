"""The options of Auction's bindings over entity groups on NoSQL stores (groupkv.py): the
driver's group options (optimistic only, drivers/groups_options.py), with Auction's own
database or keyspace. Light: no driver library is imported."""

from pydantic import Field

from bgbench.drivers.groups_options import (
    KEYSPACE,
    CassandraGroupOptions,
    HBaseGroupOptions,
    MongoGroupOptions,
)

__all__ = ["CassandraAuctionOptions", "HBaseAuctionOptions", "MongoAuctionOptions"]


class HBaseAuctionOptions(HBaseGroupOptions):
    pass


class MongoAuctionOptions(MongoGroupOptions):
    database: str = "bgbench_auction"


class CassandraAuctionOptions(CassandraGroupOptions):
    keyspace: str = Field("bgbench_auction", pattern=KEYSPACE)
