"""The options of Micro's bindings over entity groups on NoSQL stores (groupkv.py): the
driver's group options (optimistic only, drivers/groups_options.py), with Micro's own
database or keyspace. Light: no driver library is imported."""

from pydantic import Field

from bgbench.drivers.groups_options import (
    KEYSPACE,
    CassandraGroupOptions,
    HBaseGroupOptions,
    MongoGroupOptions,
)

__all__ = ["CassandraMicroOptions", "HBaseMicroOptions", "MongoMicroOptions"]


class HBaseMicroOptions(HBaseGroupOptions):
    pass


class MongoMicroOptions(MongoGroupOptions):
    database: str = "bgbench_micro"


class CassandraMicroOptions(CassandraGroupOptions):
    keyspace: str = Field("bgbench_micro", pattern=KEYSPACE)
