"""The sensor-log stores as specs: the entry points of the group "bgbench.sensorlog_stores"
(pyproject.toml). Light: the coordinator reads these without importing a binding or a
driver library."""

from bgbench.sdk.stores import StoreSpec
from bgbench.workloads.sensorlog.stores import options

STORES = "bgbench.workloads.sensorlog.stores"

SQLITE = StoreSpec(
    name="sqlite", binding=f"{STORES}.sqlite:SQLiteSensorBinding",
    options=options.SQLiteSensorOptions, concurrency="threads", embedded=True,
    file_options=("path",),
)  # fmt: skip
POSTGRES = StoreSpec(
    name="postgres", binding=f"{STORES}.postgres:PostgresSensorBinding",
    options=options.PostgresSensorOptions, concurrency="asyncio",
)  # fmt: skip
MONGODB = StoreSpec(
    name="mongodb", binding=f"{STORES}.mongodb:MongoSensorBinding",
    options=options.MongoSensorOptions, concurrency="asyncio",
)  # fmt: skip
CASSANDRA = StoreSpec(
    name="cassandra", binding=f"{STORES}.cassandra:CassandraSensorBinding",
    options=options.CassandraSensorOptions, concurrency="asyncio",
)  # fmt: skip
MYSQL = StoreSpec(
    name="mysql", binding=f"{STORES}.mysql:MySQLSensorBinding",
    options=options.MySQLSensorOptions, concurrency="asyncio",
)  # fmt: skip
