"""Micro's SQL stores as specs: the entry points "postgres" and "mysql" of the group
"bgbench.micro_stores" (pyproject.toml). Light: no binding or driver library is imported."""

from bgbench.sdk.stores import StoreSpec
from bgbench.workloads.micro.stores import options_sql

STORES = "bgbench.workloads.micro.stores"

POSTGRES = StoreSpec(
    name="postgres", binding=f"{STORES}.postgres:PostgresMicroBinding",
    options=options_sql.PostgresMicroOptions, concurrency="asyncio",
)  # fmt: skip
MYSQL = StoreSpec(
    name="mysql", binding=f"{STORES}.mysql:MySQLMicroBinding",
    options=options_sql.MySQLMicroOptions, concurrency="asyncio",
)  # fmt: skip
