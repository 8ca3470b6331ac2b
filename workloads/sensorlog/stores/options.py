"""The store options of the sensor-log bindings: the drivers' options, with the paper's
strong and weak consistency. Light: no driver library and no binding is imported here
(specs.py names these)."""

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from bgbench.drivers.cassandra_options import CassandraOptions
from bgbench.drivers.mongodb_options import MongoOptions
from bgbench.drivers.mysql_options import Isolation as MySQLIsolation
from bgbench.drivers.mysql_options import MySQLOptions
from bgbench.drivers.postgres_options import Isolation, PostgresOptions
from bgbench.drivers.sqlite_options import SQLiteOptions

# Q2's page: each page is a request of its own under the server's read timeout, which a
# 5,000-row SAI page (the driver's default) can outlive on a busy node.
PAGE_ROWS = 1000
LEVEL: dict[str, Isolation] = {"strong": "serializable", "weak": "read committed"}


class SQLiteSensorOptions(SQLiteOptions):
    path: str = Field("bgbench-data/sensorlog.sqlite", description="database file")
    consistency: Literal["strong", "weak"] = Field(
        "weak", description="strong: synchronous FULL, rollback journal; weak: OFF, no journal"
    )


class PostgresSensorOptions(PostgresOptions):
    consistency: Literal["strong", "weak"] = Field(
        "weak",
        validate_default=True,  # weak, the default, has no standby to read from
        description="strong: logged table, serializable, synchronous_commit on; "
        "weak: unlogged table, read committed, synchronous_commit off",
    )
    isolation: Isolation | None = Field(  # type: ignore[assignment]
        None, description="default: serializable when strong, read committed when weak"
    )

    @property
    def level(self) -> Isolation:
        return self.isolation or LEVEL[self.consistency]

    @field_validator("consistency")
    @classmethod
    def _replicated(cls, consistency: str, info: ValidationInfo) -> str:
        if info.data.get("read_from") != "replica":
            return consistency
        if consistency == "weak":
            raise ValueError(
                "weak keeps the measures in an UNLOGGED table, which no standby has: use "
                "consistency strong (with isolation 'repeatable read') to read from the replica"
            )
        if info.data.get("isolation") is None:
            raise ValueError(
                "strong runs serializable, which a hot standby cannot: set isolation "
                "'repeatable read' to read from the replica"
            )
        return consistency


MYSQL_LEVEL: dict[str, MySQLIsolation] = {"strong": "serializable", "weak": "read uncommitted"}


class MySQLSensorOptions(MySQLOptions):
    database: str = Field("bgbench_sensorlog", pattern=r"^[A-Za-z0-9_]{1,64}$")
    consistency: Literal["strong", "weak"] = Field(
        "weak",
        description="strong: serializable, a bulk load in one transaction; weak: read "
        "uncommitted (dirty reads), a transaction per batch",
    )
    isolation: MySQLIsolation | None = Field(  # type: ignore[assignment]
        None, description="default: serializable when strong, read uncommitted when weak"
    )
    statement_timeout_s: Annotated[float, Field(ge=0, le=86_400)] = Field(
        600.0, description="the studies' Q2 and Q3 and a load's statements (0: never)"
    )

    @property
    def level(self) -> MySQLIsolation:
        return self.isolation or MYSQL_LEVEL[self.consistency]


class MongoSensorOptions(MongoOptions):
    database: str = "bgbench_sensorlog"
    consistency: Literal["strong", "weak"] = Field(
        "weak", description="strong: w=1, j=true; weak: w=0 (the paper's Table 1)"
    )
    timeout_ms: Annotated[
        int, Field(ge=100, description="server selection; socket timeout of the rating")
    ] = 10_000
    load_timeout_s: Annotated[
        float,
        Field(
            gt=0,
            description="socket timeout of the studies and loading (an index build, a chunk "
            "of inserts, a weak load's final count), and how long that count may fall short",
        ),
    ] = 600.0


class CassandraSensorOptions(CassandraOptions):
    keyspace: str = Field("bgbench_sensorlog", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
    consistency: Literal["strong", "weak"] = Field(
        "weak", description="strong: QUORUM reads and writes; weak: ONE (the commit log mode "
        "is the server's)",
    )  # fmt: skip
    load_concurrency: Annotated[int, Field(ge=1, le=2048)] = 64
    load_batch: Annotated[
        int, Field(ge=1, le=1000, description="rows per unlogged batch (one partition)")
    ] = 256
    fetch_size: Annotated[int, Field(ge=1, description="rows per page of Q2")] = PAGE_ROWS
    timeout_s: Annotated[float, Field(gt=0, description="per request")] = 30.0
    query_timeout_s: Annotated[
        float, Field(gt=0, description="per request of the studies' Q2 and Q3")
    ] = 600.0
    q3_splits: Annotated[
        int,
        Field(
            ge=1,
            le=4096,
            description="the studies' Q3 as this many token-range counts, "
            "summed (1: one count(*)); for counts the server's read timeout cuts short",
        ),
    ] = 1
    index_timeout_s: Annotated[
        float, Field(gt=0, description="how long an index build may take")
    ] = 3600.0
