"""Micro on Cassandra: entity groups as partitions, committed by lightweight
transactions (groupkv.py, drivers/cassandra_groups.py). Socialites are tasks."""

from typing import ClassVar

from pydantic import BaseModel

from bgbench.drivers.cassandra_groups import CassandraGroups
from bgbench.workloads.micro.store import Concurrency
from bgbench.workloads.micro.stores.groupkv import TABLE, MicroGroupKVBinding
from bgbench.workloads.micro.stores.options_kv import CassandraMicroOptions


class CassandraMicroBinding(MicroGroupKVBinding):
    name: ClassVar[str] = "cassandra"
    concurrency: ClassVar[Concurrency] = "asyncio"
    Options: ClassVar[type[BaseModel]] = CassandraMicroOptions

    def make_groups(self, options: CassandraMicroOptions) -> CassandraGroups:
        return CassandraGroups(options, TABLE)
