"""The store options of Auction's SQL bindings (PostgreSQL, MySQL): the driver's
transactional options (lock_timeout_ms and its rules) and the SDK's
`concurrency_control`. Light: no driver library and no binding is imported here
(specs_sql.py names these)."""

from typing import ClassVar

from bgbench.drivers.mysql_options import MySQLTxOptions
from bgbench.drivers.postgres_options import PostgresTxOptions
from bgbench.sdk.transactions import ConcurrencyControlOptions

__all__ = ["MySQLAuctionOptions", "PostgresAuctionOptions"]


class PostgresAuctionOptions(PostgresTxOptions, ConcurrencyControlOptions):
    """pessimistic: READ COMMITTED and SELECT ... FOR UPDATE on the group's row (the item,
    or the seller); optimistic: SERIALIZABLE (a serialization failure aborts the attempt
    as a conflict)."""

    binding_label: ClassVar[str] = "the Auction binding"


class MySQLAuctionOptions(MySQLTxOptions, ConcurrencyControlOptions):
    """pessimistic: SELECT ... FOR UPDATE on the group's row (InnoDB row locks);
    optimistic: a compare-and-set of the group row's version at commit."""
