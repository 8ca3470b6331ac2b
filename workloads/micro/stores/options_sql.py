"""The store options of Micro's SQL bindings (PostgreSQL, MySQL): the driver's
transactional options (lock_timeout_ms and its rules), the SDK's `concurrency_control`
and the order update_items takes its locks in. Light: no driver library and no binding
is imported here (specs_sql.py names these)."""

from typing import ClassVar, Literal

from pydantic import Field

from bgbench.drivers.mysql_options import MySQLTxOptions
from bgbench.drivers.postgres_options import PostgresTxOptions
from bgbench.sdk.transactions import ConcurrencyControlOptions

__all__ = ["MySQLMicroOptions", "PostgresMicroOptions"]

LockOrder = Literal["sorted", "given"]
LOCK_ORDER = (
    "the order in which update_items takes its items' locks under pessimistic control: "
    "sorted (by item: no two transactions deadlock) or given (the workload's draw: "
    "opposite orders deadlock, and the store aborts one)"
)


class PostgresMicroOptions(PostgresTxOptions, ConcurrencyControlOptions):
    """pessimistic: READ COMMITTED and SELECT ... FOR UPDATE on the items; optimistic:
    SERIALIZABLE (a serialization failure aborts the attempt as a conflict)."""

    binding_label: ClassVar[str] = "the Micro binding"

    lock_order: LockOrder = Field("sorted", description=LOCK_ORDER)


class MySQLMicroOptions(MySQLTxOptions, ConcurrencyControlOptions):
    """pessimistic: SELECT ... FOR UPDATE on the items (InnoDB row locks); optimistic: a
    compare-and-set of the group row's version at commit (Figure 10's per-group CAS)."""

    lock_order: LockOrder = Field("sorted", description=LOCK_ORDER)
