"""Auction on MongoDB-wire servers: entity groups as documents, committed by update_one
filtered on the version (groupkv.py, drivers/mongodb_groups.py). Socialites are tasks."""

from typing import ClassVar

from pydantic import BaseModel

from bgbench.drivers.mongodb_groups import MongoGroups
from bgbench.workloads.auction.store import Concurrency
from bgbench.workloads.auction.stores.groupkv import TABLE, AuctionGroupKVBinding
from bgbench.workloads.auction.stores.options_kv import MongoAuctionOptions


class MongoAuctionBinding(AuctionGroupKVBinding):
    name: ClassVar[str] = "mongodb"
    concurrency: ClassVar[Concurrency] = "asyncio"
    Options: ClassVar[type[BaseModel]] = MongoAuctionOptions

    def make_groups(self, options: MongoAuctionOptions) -> MongoGroups:
        return MongoGroups(options, TABLE)
