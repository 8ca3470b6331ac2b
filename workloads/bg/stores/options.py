"""The store options of BG's bindings: the drivers' options, with what BG's designs add.
Light: no driver library and no binding is imported here (specs.py names these)."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bgbench.drivers.cassandra_options import CassandraOptions as DriverCassandraOptions
from bgbench.drivers.cassandra_options import Level, check_read_level
from bgbench.drivers.hbase_options import HBaseOptions
from bgbench.drivers.memcached_options import MemcachedOptions
from bgbench.drivers.mongodb_options import MongoOptions as DriverMongoOptions
from bgbench.drivers.mongodb_options import ReadPreferenceName
from bgbench.drivers.mysql_options import MySQLOptions
from bgbench.drivers.postgres_options import PostgresOptions
from bgbench.drivers.riak_options import RiakOptions
from bgbench.drivers.sqlite_options import SQLiteOptions as DriverSQLiteOptions
from bgbench.drivers.sqlite_options import Synchronous

__all__ = [
    "CasqlOptions",
    "CassandraOptions",
    "HBaseOptions",
    "MongoOptions",
    "MySQLOptions",
    "NullOptions",
    "PostgresOptions",
    "RiakOptions",
    "SQLiteOptions",
]


class SQLiteOptions(DriverSQLiteOptions):
    path: str = Field("bgbench-data/bg.sqlite", description="database file, shared by agents")
    synchronous: Synchronous = "NORMAL"


class NullOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    concurrency: Literal["asyncio", "threads"] = "asyncio"


class CasqlOptions(PostgresOptions, MemcachedOptions):
    consistency: Literal["invalidation", "ttl"] = "invalidation"
    ttl_s: Annotated[int, Field(ge=1, le=30 * 86400)] = 60
    compress: bool = True
    lease_s: Annotated[
        int, Field(ge=1, le=3600, description="invalidation: how long a write's marker lives")
    ] = 10


class MongoOptions(DriverMongoOptions):
    comments: Literal["embedded", "collection"] = Field(
        "embedded", description="comments in the resource (Figure 1.b) or apart (Figure 5)"
    )
    write_concern: str | int = Field(1, description='w: 0, 1, 2, ... or "majority"')
    journal: bool = False
    read_preference: ReadPreferenceName = "primary"


class CassandraOptions(DriverCassandraOptions):
    read_consistency: Level = "ONE"
    write_consistency: Level = "ONE"
    concurrency: Literal["asyncio", "threads"] = Field(
        "asyncio", description="socialites as tasks on an event loop, or one thread each"
    )
    driver: Literal["acsylla", "cassandra-driver"] = Field(
        "acsylla",
        description="asyncio socialites' driver: acsylla (the C++ driver; the default) costs a "
        "quarter to a tenth of cassandra-driver's client CPU per call; schema, loading and "
        "threads use cassandra-driver",
    )

    @model_validator(mode="after")
    def _levels(self) -> "CassandraOptions":
        check_read_level(self.read_consistency)
        return self
