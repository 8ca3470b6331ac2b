"""HBase's options: its Thrift gateway (happybase), without the driver library."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class HBaseOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 9090
    table_prefix: str = Field("bg_", pattern=r"^[A-Za-z0-9_]{0,40}$")
    server_name: str = Field("HBase", description="what the server is (HBase 2.6.1...)")
    batch_size: Annotated[int, Field(ge=1)] = 1000
    timeout_ms: Annotated[int, Field(ge=100)] = 20_000
