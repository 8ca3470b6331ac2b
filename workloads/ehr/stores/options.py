"""The store options of EHR's bindings: the drivers' options, with EHR's consistency presets.
Light: no driver library and no binding is imported here (specs.py names these)."""

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from bgbench.drivers.cassandra_options import NETWORK_STRATEGY, Level, check_read_level
from bgbench.drivers.cassandra_options import CassandraOptions as DriverCassandraOptions
from bgbench.drivers.mongodb_options import MongoOptions as DriverMongoOptions
from bgbench.drivers.mongodb_options import ReadPreferenceName
from bgbench.drivers.mysql_options import MySQLOptions
from bgbench.drivers.postgres_options import PostgresOptions
from bgbench.drivers.riak_options import RiakOptions
from bgbench.drivers.sqlite_options import SQLiteOptions as DriverSQLiteOptions
from bgbench.drivers.sqlite_options import Synchronous

__all__ = [
    "CassandraEHROptions",
    "MongoEHROptions",
    "MySQLEHROptions",
    "PostgresOptions",
    "RiakEHROptions",
    "SQLiteOptions",
]


class SQLiteOptions(DriverSQLiteOptions):
    path: str = Field("bgbench-data/ehr.sqlite", description="database file, shared by agents")
    synchronous: Synchronous = "NORMAL"


class MySQLEHROptions(MySQLOptions):
    database: str = Field("bgbench_ehr", pattern=r"^[A-Za-z0-9_]{1,64}$")


class RiakEHROptions(RiakOptions):
    bucket_prefix: str = Field("ehr_", pattern=r"^[A-Za-z0-9_-]{0,40}$")


MONGO_PRESETS: dict[str, tuple[str | int, bool, ReadPreferenceName]] = {
    "strong": (1, False, "primaryPreferred"),
    "majority": ("majority", True, "primary"),
    "eventual": (1, False, "nearest"),
}


class MongoEHROptions(DriverMongoOptions):
    database: str = "bgbench_ehr"
    consistency: Literal["strong", "majority", "eventual"] = Field(
        "strong", description="strong (the paper's Table 1), majority, or eventual"
    )
    write_concern: str | int | None = Field(
        None, description='w: 0, 1, 2, ... or "majority" (default: the preset\'s)'
    )
    journal: bool | None = Field(None, description="j (default: the preset's)")
    read_preference: ReadPreferenceName | None = Field(None, description="default: the preset's")

    def settings(self) -> tuple[str | int, bool, ReadPreferenceName]:
        """w, j and the read preference: the preset's, each overridden when set."""
        w, j, read = MONGO_PRESETS[self.consistency]
        return (
            w if self.write_concern is None else self.write_concern,
            j if self.journal is None else self.journal,
            read if self.read_preference is None else self.read_preference,
        )


CASSANDRA_PRESETS: dict[str, tuple[Level, Level]] = {  # (read, write)
    "strong": ("LOCAL_QUORUM", "EACH_QUORUM"),
    "eventual": ("ONE", "ONE"),
}


class CassandraEHROptions(DriverCassandraOptions):
    keyspace: str = Field("bgbench_ehr", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
    datacenters: dict[str, Annotated[int, Field(ge=1)]] | None = Field(
        None, description="replicas per data centre (NetworkTopologyStrategy), as a map or "
        "dc1:1,dc2:1; replaces replication_factor",
    )  # fmt: skip
    consistency: Literal["strong", "eventual"] = Field(
        "strong", description="strong (EACH_QUORUM / LOCAL_QUORUM) or eventual (ONE / ONE)"
    )
    coordinators: Literal["local_dc", "every_dc"] = Field(
        "local_dc", description="local_dc: nodes of the first contact point's data centre "
        "coordinate (the paper's clients); every_dc: every node, round robin",
    )  # fmt: skip
    read_consistency: Level | None = Field(None, description="default: the preset's")
    write_consistency: Level | None = Field(None, description="default: the preset's")

    @field_validator("datacenters", mode="before")
    @classmethod
    def _pairs(cls, value: object) -> object:
        """Also "dc1:1,dc2:1,dc3:1", as one -p value."""
        if not isinstance(value, str):
            return value
        pairs = [p.partition(":") for p in value.split(",") if p.strip()]
        if any(not sep or not n.strip().isdigit() for _, sep, n in pairs):
            raise ValueError(f"{value!r}: write replicas per data centre as dc1:1,dc2:1")
        return {dc.strip(): int(n) for dc, _, n in pairs}

    @field_validator("datacenters")
    @classmethod
    def _names(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        if value is not None:
            if not value:
                raise ValueError("name at least one data centre, or leave datacenters out")
            for name in value:
                if not name.replace("_", "").replace("-", "").isalnum():
                    raise ValueError(f"data centre name {name!r}: letters, digits, - and _ only")
        return value

    @model_validator(mode="after")
    def _levels(self) -> "CassandraEHROptions":
        check_read_level(self.levels()[0])
        return self

    def levels(self) -> tuple[Level, Level]:
        """The read and write consistency levels: the preset's, each overridden when set."""
        read, write = CASSANDRA_PRESETS[self.consistency]
        return self.read_consistency or read, self.write_consistency or write

    def replication(self) -> dict[str, str]:
        """The keyspace's replication map, as system_schema.keyspaces holds it."""
        if self.datacenters is None:
            return super().replication()
        return {"class": NETWORK_STRATEGY, **{dc: str(n) for dc, n in self.datacenters.items()}}
