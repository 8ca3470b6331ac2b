"""EHR's stores as specs: the entry points of the group "bgbench.ehr_stores"
(pyproject.toml). Light: the coordinator reads these without importing a binding or a
driver library."""

from bgbench.sdk.stores import StoreSpec
from bgbench.workloads.ehr.stores import options

STORES = "bgbench.workloads.ehr.stores"

SQLITE = StoreSpec(
    name="sqlite", binding=f"{STORES}.sqlite:SQLiteBinding", options=options.SQLiteOptions,
    concurrency="threads", embedded=True, file_options=("path",),
)  # fmt: skip
POSTGRES = StoreSpec(
    name="postgres", binding=f"{STORES}.postgres:PostgresEHRBinding",
    options=options.PostgresOptions, concurrency="asyncio",
)  # fmt: skip
MONGODB = StoreSpec(
    name="mongodb", binding=f"{STORES}.mongodb:MongoEHRBinding",
    options=options.MongoEHROptions, concurrency="asyncio",
)  # fmt: skip
CASSANDRA = StoreSpec(
    name="cassandra", binding=f"{STORES}.cassandra:CassandraEHRBinding",
    options=options.CassandraEHROptions, concurrency="asyncio",
)  # fmt: skip
RIAK = StoreSpec(
    name="riak", binding=f"{STORES}.riak:RiakEHRBinding", options=options.RiakEHROptions,
    concurrency="asyncio",
)  # fmt: skip
MYSQL = StoreSpec(
    name="mysql", binding=f"{STORES}.mysql:MySQLEHRBinding", options=options.MySQLEHROptions,
    concurrency="asyncio",
)  # fmt: skip
