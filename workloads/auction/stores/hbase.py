"""Auction on HBase: entity groups by check-and-put on the group's row (groupkv.py,
drivers/hbase_groups.py). Happybase blocks: socialites are threads."""

from typing import ClassVar

from pydantic import BaseModel

from bgbench.drivers.hbase_groups import HBaseGroups
from bgbench.workloads.auction.store import Concurrency
from bgbench.workloads.auction.stores.groupkv import TABLE, AuctionGroupKVBinding
from bgbench.workloads.auction.stores.options_kv import HBaseAuctionOptions


class HBaseAuctionBinding(AuctionGroupKVBinding):
    name: ClassVar[str] = "hbase"
    concurrency: ClassVar[Concurrency] = "threads"
    Options: ClassVar[type[BaseModel]] = HBaseAuctionOptions

    def make_groups(self, options: HBaseAuctionOptions) -> HBaseGroups:
        return HBaseGroups(options, TABLE)
