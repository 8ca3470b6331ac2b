"""The store options of Micro's SQL bindings (PostgreSQL, MySQL): the driver's options, the
workload's `concurrency_control` and how long a transaction waits for a lock. Light: no
driver library and no binding is imported here (specs_sql.py names these)."""

import math
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from bgbench.drivers.mysql_options import MySQLOptions
from bgbench.drivers.postgres_options import Isolation, PostgresOptions
from bgbench.workloads.micro.stores.options import MicroTxOptions

__all__ = ["LOCK_TIMEOUT_MS", "MySQLMicroOptions", "PostgresMicroOptions", "lock_wait"]

LOCK_TIMEOUT_MS = "how long a transaction waits for a row lock before it aborts, ms"
LockOrder = Literal["sorted", "given"]
LOCK_ORDER = (
    "the order in which update_items takes its items' locks under pessimistic control: "
    "sorted (by item: no two transactions deadlock) or given (the workload's draw: "
    "opposite orders deadlock, and the store aborts one)"
)
MYSQL_SECONDS = " (InnoDB waits whole seconds: rounded up; default: lock_wait_timeout_s)"


class PostgresMicroOptions(PostgresOptions, MicroTxOptions):
    """pessimistic: READ COMMITTED and SELECT ... FOR UPDATE on the items; optimistic:
    SERIALIZABLE (a serialization failure aborts the attempt as a conflict)."""

    lock_timeout_ms: Annotated[int, Field(ge=1, le=3_600_000, description=LOCK_TIMEOUT_MS)] = 5000
    lock_order: LockOrder = Field("sorted", description=LOCK_ORDER)

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


class MySQLMicroOptions(MySQLOptions, MicroTxOptions):
    """pessimistic: SELECT ... FOR UPDATE on the items (InnoDB row locks); optimistic: a
    compare-and-set of the group row's version at commit (Figure 10's per-group CAS)."""

    lock_timeout_ms: Annotated[
        int | None, Field(ge=1, le=3_600_000, description=LOCK_TIMEOUT_MS + MYSQL_SECONDS)
    ] = None
    lock_order: LockOrder = Field("sorted", description=LOCK_ORDER)

    @model_validator(mode="after")
    def _lock_wait_in_seconds(self) -> "MySQLMicroOptions":
        lock_wait(self)
        return self


def lock_wait(options: MySQLOptions) -> None:
    """lock_timeout_ms as InnoDB's whole seconds (innodb_lock_wait_timeout), rounded up."""
    wait_ms = getattr(options, "lock_timeout_ms", None)
    if wait_ms is None:
        return
    if "lock_wait_timeout_s" in options.model_fields_set:
        raise ValueError("set lock_timeout_ms or lock_wait_timeout_s, not both")
    options.lock_wait_timeout_s = math.ceil(wait_ms / 1000)
