"""The store options of Micro's SQL bindings (PostgreSQL, MySQL): the driver's options, the
workload's `concurrency_control` and how long a transaction waits for a lock. Light: no
driver library and no binding is imported here (specs_sql.py names these)."""

from typing import Annotated

from pydantic import Field, field_validator

from bgbench.drivers.postgres_options import Isolation, PostgresOptions
from bgbench.workloads.micro.store import ConcurrencyControl

__all__ = ["LOCK_TIMEOUT_MS", "PostgresMicroOptions"]

LOCK_TIMEOUT_MS = "how long a transaction waits for a row lock before it aborts, ms"


class PostgresMicroOptions(PostgresOptions):
    """pessimistic: READ COMMITTED and SELECT ... FOR UPDATE on the items; optimistic:
    SERIALIZABLE (a serialization failure aborts the attempt as a conflict)."""

    concurrency_control: ConcurrencyControl = "pessimistic"

    lock_timeout_ms: Annotated[int, Field(ge=1, le=3_600_000, description=LOCK_TIMEOUT_MS)] = 5000

    @field_validator("isolation")
    @classmethod
    def _isolation_follows_control(cls, isolation: Isolation) -> Isolation:
        if isolation != "read committed":
            raise ValueError(
                "the Micro binding sets each transaction's isolation from concurrency_control "
                "(pessimistic: read committed with row locks, optimistic: serializable): "
                "leave isolation out"
            )
        return isolation
