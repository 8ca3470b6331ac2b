"""Micro on MongoDB-wire servers: entity groups as documents, committed by update_one
filtered on the version (groupkv.py, drivers/mongodb_groups.py). Socialites are tasks."""

from typing import ClassVar

from pydantic import BaseModel

from bgbench.drivers.mongodb_groups import MongoGroups
from bgbench.workloads.micro.store import Concurrency
from bgbench.workloads.micro.stores.groupkv import TABLE, MicroGroupKVBinding
from bgbench.workloads.micro.stores.options_kv import MongoMicroOptions


class MongoMicroBinding(MicroGroupKVBinding):
    name: ClassVar[str] = "mongodb"
    concurrency: ClassVar[Concurrency] = "asyncio"
    Options: ClassVar[type[BaseModel]] = MongoMicroOptions

    def make_groups(self, options: MongoMicroOptions) -> MongoGroups:
        return MongoGroups(options, TABLE)
