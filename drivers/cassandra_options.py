"""Cassandra's options, without the driver library: contact points, keyspace and its
replication, consistency levels by name."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Level = Literal["ONE", "TWO", "THREE", "QUORUM", "LOCAL_QUORUM", "EACH_QUORUM", "ALL", "LOCAL_ONE"]
SIMPLE_STRATEGY = "org.apache.cassandra.locator.SimpleStrategy"
NETWORK_STRATEGY = "org.apache.cassandra.locator.NetworkTopologyStrategy"


def check_read_level(level: str) -> None:
    if level == "EACH_QUORUM":
        raise ValueError("EACH_QUORUM is for writes only: use QUORUM or LOCAL_QUORUM for reads")


class CassandraOptions(BaseModel):
    """The options every Cassandra binding takes; a workload's binding sets its own default
    keyspace and adds its consistency options."""

    model_config = ConfigDict(extra="forbid")

    hosts: list[str] = Field(["127.0.0.1"], description="contact points, or one comma list")
    port: Annotated[int, Field(ge=1, le=65535)] = 9042
    keyspace: str = Field("bgbench", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
    replication_factor: Annotated[int, Field(ge=1)] = 1
    load_concurrency: Annotated[int, Field(ge=1, le=2048)] = 128
    timeout_s: Annotated[float, Field(gt=0)] = 10.0

    @field_validator("hosts", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [h.strip() for h in value.split(",") if h.strip()]
        return value

    @field_validator("hosts")
    @classmethod
    def _some(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("name at least one contact point")
        return value

    @field_validator("keyspace")
    @classmethod
    def _fold(cls, value: str) -> str:
        return value.lower()  # as CQL folds an unquoted name

    def where(self) -> str:
        return f"{','.join(self.hosts)}:{self.port}"

    def replication(self) -> dict[str, str]:
        """The keyspace's replication map, as system_schema.keyspaces holds it."""
        return {"class": SIMPLE_STRATEGY, "replication_factor": str(self.replication_factor)}
