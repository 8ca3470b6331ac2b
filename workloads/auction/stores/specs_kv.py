"""Auction's NoSQL stores as specs (entity groups, groupkv.py): entry points of the group
"bgbench.auction_stores" (pyproject.toml). Light: no binding nor driver library imported."""

from bgbench.sdk.stores import StoreSpec
from bgbench.workloads.auction.stores import options_kv

STORES = "bgbench.workloads.auction.stores"

HBASE = StoreSpec(
    name="hbase", binding=f"{STORES}.hbase:HBaseAuctionBinding",
    options=options_kv.HBaseAuctionOptions, concurrency="threads",
)  # fmt: skip
MONGODB = StoreSpec(
    name="mongodb", binding=f"{STORES}.mongodb:MongoAuctionBinding",
    options=options_kv.MongoAuctionOptions, concurrency="asyncio",
)  # fmt: skip
CASSANDRA = StoreSpec(
    name="cassandra", binding=f"{STORES}.cassandra:CassandraAuctionBinding",
    options=options_kv.CassandraAuctionOptions, concurrency="asyncio",
)  # fmt: skip
