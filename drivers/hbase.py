"""HBase over its Thrift gateway (happybase): blocking connections only, so its bindings
run socialites as threads. Thrift and socket errors are the store's faults."""

from collections.abc import Mapping
from typing import Any

import happybase
from thriftpy2.thrift import TException

from bgbench.drivers.hbase_options import HBaseOptions
from bgbench.errors import StoreError

__all__ = ["DRIVER_ERRORS", "HBaseOptions", "TException", "connect", "create_tables", "describe"]

DRIVER_ERRORS = (TException, OSError)


def connect(options: HBaseOptions) -> happybase.Connection:
    """A connection whose tables are named with the options' prefix."""
    try:
        return happybase.Connection(
            options.host, options.port, timeout=options.timeout_ms,
            table_prefix=options.table_prefix or None, table_prefix_separator=b"",
        )  # fmt: skip
    except DRIVER_ERRORS as exc:
        where = f"{options.host}:{options.port}"
        raise StoreError(f"cannot reach HBase Thrift at {where}: {exc}") from None


def create_tables(conn: happybase.Connection, tables: Mapping[str, dict[str, Any]]) -> None:
    """Each table (name -> column families) unless it exists; one another process made
    meanwhile is taken as made."""
    for table, families in tables.items():
        if table.encode() in conn.tables():
            continue
        try:
            conn.create_table(table, families)
        except TException as exc:  # another load process made it first
            if "exist" not in str(exc).lower():
                raise StoreError(f"cannot create HBase table {table}: {exc}") from None


def missing_tables(options: HBaseOptions, names: tuple[str, ...]) -> list[str]:
    conn = connect(options)
    try:
        return [t for t in names if t.encode() not in conn.tables()]
    except DRIVER_ERRORS as exc:
        where = f"{options.host}:{options.port}"
        raise StoreError(f"cannot list HBase tables at {where}: {exc}") from None
    finally:
        conn.close()


def describe(options: HBaseOptions) -> str:
    return f"{options.server_name} (Thrift at {options.host}:{options.port})"
