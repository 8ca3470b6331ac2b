"""Micro's NoSQL stores as specs (entity groups, groupkv.py): entry points of the group
"bgbench.micro_stores" (pyproject.toml). Light: no binding nor driver library imported."""

from bgbench.sdk.stores import StoreSpec
from bgbench.workloads.micro.stores import options_kv

STORES = "bgbench.workloads.micro.stores"

HBASE = StoreSpec(
    name="hbase", binding=f"{STORES}.hbase:HBaseMicroBinding",
    options=options_kv.HBaseMicroOptions, concurrency="threads",
)  # fmt: skip
MONGODB = StoreSpec(
    name="mongodb", binding=f"{STORES}.mongodb:MongoMicroBinding",
    options=options_kv.MongoMicroOptions, concurrency="asyncio",
)  # fmt: skip
CASSANDRA = StoreSpec(
    name="cassandra", binding=f"{STORES}.cassandra:CassandraMicroBinding",
    options=options_kv.CassandraMicroOptions, concurrency="asyncio",
)  # fmt: skip
