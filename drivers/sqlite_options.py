"""SQLite's options: a database file on this host, shared by the load processes."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class SQLiteOptions(BaseModel):
    """The options every SQLite binding takes (a workload's binding sets its own default
    path and may add options). `path` names a file: a remote agent keeps it in its work
    directory (the binding's spec lists it in `file_options`)."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field("bgbench-data/bg.sqlite", description="database file, shared by agents")
    busy_timeout_ms: Annotated[int, Field(ge=0)] = 30_000
    cache_size_kb: Annotated[int, Field(ge=128)] = 65_536


Synchronous = Annotated[str, Field(pattern="^(OFF|NORMAL|FULL|EXTRA)$")]
