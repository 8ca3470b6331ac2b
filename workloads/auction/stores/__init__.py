"""Store bindings of the Auction workload, one file each, registered as entry points in
pyproject.toml (group "bgbench.auction_stores"); each satisfies store.AuctionBinding."""
