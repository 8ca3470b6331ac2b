"""Auction's stores as specs: the entry points of the group "bgbench.auction_stores"
(pyproject.toml). Light: the coordinator reads these without importing a binding or a
driver library."""

from bgbench.sdk.stores import StoreSpec
from bgbench.workloads.auction.stores import options

STORES = "bgbench.workloads.auction.stores"

SQLITE = StoreSpec(
    name="sqlite", binding=f"{STORES}.sqlite:SQLiteAuctionBinding",
    options=options.SQLiteOptions, concurrency="threads", embedded=True, file_options=("path",),
)  # fmt: skip
