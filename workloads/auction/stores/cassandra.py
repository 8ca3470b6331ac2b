"""Auction on Cassandra: entity groups as partitions, committed by lightweight
transactions (groupkv.py, drivers/cassandra_groups.py). Socialites are tasks."""

from typing import ClassVar

from pydantic import BaseModel

from bgbench.drivers.cassandra_groups import CassandraGroups
from bgbench.workloads.auction.store import Concurrency
from bgbench.workloads.auction.stores.groupkv import TABLE, AuctionGroupKVBinding
from bgbench.workloads.auction.stores.options_kv import CassandraAuctionOptions


class CassandraAuctionBinding(AuctionGroupKVBinding):
    name: ClassVar[str] = "cassandra"
    concurrency: ClassVar[Concurrency] = "asyncio"
    Options: ClassVar[type[BaseModel]] = CassandraAuctionOptions

    def make_groups(self, options: CassandraAuctionOptions) -> CassandraGroups:
        return CassandraGroups(options, TABLE)
