"""BG's stores as specs: the entry points of the group "bgbench.bg_stores" (pyproject.toml).
Light: the coordinator reads these without importing a binding or a driver library."""

from bgbench.sdk.stores import StoreSpec
from bgbench.workloads.bg.stores import options

STORES = "bgbench.workloads.bg.stores"

SQLITE = StoreSpec(
    name="sqlite", binding=f"{STORES}.sqlite:SQLiteBinding", options=options.SQLiteOptions,
    concurrency="threads", embedded=True, file_options=("path",),
)  # fmt: skip
NULL = StoreSpec(
    name="null", binding=f"{STORES}.null:NullBinding", options=options.NullOptions,
    concurrency="asyncio", suspends=False, embedded=True,
)  # fmt: skip
POSTGRES = StoreSpec(
    name="postgres", binding=f"{STORES}.postgres:PostgresBinding",
    options=options.PostgresOptions, concurrency="asyncio",
)  # fmt: skip
CASQL = StoreSpec(
    name="casql", binding=f"{STORES}.casql:CasqlBinding", options=options.CasqlOptions,
    concurrency="asyncio",
)  # fmt: skip
MONGODB = StoreSpec(
    name="mongodb", binding=f"{STORES}.mongodb:MongoBinding", options=options.MongoOptions,
    concurrency="asyncio",
)  # fmt: skip
CASSANDRA = StoreSpec(
    name="cassandra", binding=f"{STORES}.cassandra:CassandraBinding",
    options=options.CassandraOptions, concurrency="asyncio",
)  # fmt: skip
HBASE = StoreSpec(
    name="hbase", binding=f"{STORES}.hbase:HBaseBinding", options=options.HBaseOptions,
    concurrency="threads",
)  # fmt: skip
RIAK = StoreSpec(
    name="riak", binding=f"{STORES}.riak:RiakBinding", options=options.RiakOptions,
    concurrency="asyncio",
)  # fmt: skip
MYSQL = StoreSpec(
    name="mysql", binding=f"{STORES}.mysql:MySQLBinding", options=options.MySQLOptions,
    concurrency="asyncio",
)  # fmt: skip
