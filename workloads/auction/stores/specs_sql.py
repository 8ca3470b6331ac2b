"""Auction's SQL stores as specs: the entry points "postgres" and "mysql" of the group
"bgbench.auction_stores" (pyproject.toml). Light: no binding or driver library is imported."""

from bgbench.sdk.stores import StoreSpec
from bgbench.workloads.auction.stores import options_sql

STORES = "bgbench.workloads.auction.stores"

POSTGRES = StoreSpec(
    name="postgres", binding=f"{STORES}.postgres:PostgresAuctionBinding",
    options=options_sql.PostgresAuctionOptions, concurrency="asyncio",
)  # fmt: skip
MYSQL = StoreSpec(
    name="mysql", binding=f"{STORES}.mysql:MySQLAuctionBinding",
    options=options_sql.MySQLAuctionOptions, concurrency="asyncio",
)  # fmt: skip
