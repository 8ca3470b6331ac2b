"""Micro on HBase: entity groups by check-and-put on the group's row (groupkv.py,
drivers/hbase_groups.py). Happybase blocks: socialites are threads."""

from typing import ClassVar

from pydantic import BaseModel

from bgbench.drivers.hbase_groups import HBaseGroups
from bgbench.workloads.micro.store import Concurrency
from bgbench.workloads.micro.stores.groupkv import TABLE, MicroGroupKVBinding
from bgbench.workloads.micro.stores.options_kv import HBaseMicroOptions


class HBaseMicroBinding(MicroGroupKVBinding):
    name: ClassVar[str] = "hbase"
    concurrency: ClassVar[Concurrency] = "threads"
    Options: ClassVar[type[BaseModel]] = HBaseMicroOptions

    def make_groups(self, options: HBaseMicroOptions) -> HBaseGroups:
        return HBaseGroups(options, TABLE)
