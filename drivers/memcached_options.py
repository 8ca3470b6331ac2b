"""memcached's options (CASQL's cache in front of PostgreSQL), without the driver library."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator


def check_address(address: str) -> str:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{address!r} is not host:port: use e.g. 127.0.0.1:11211")
    return address


class MemcachedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memcached: str = Field("127.0.0.1:11211", description="host:port of memcached")
    timeout_s: Annotated[float, Field(gt=0)] = 5.0

    @field_validator("memcached")
    @classmethod
    def _address(cls, address: str) -> str:
        return check_address(address)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.memcached.rsplit(":", 1)
        return host, int(port)
