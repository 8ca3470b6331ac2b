"""The driver layer: one module per store, shared by every workload's bindings.

Each store has a light options module (`<store>_options.py`: its pydantic options, the
DSN forms campaigns hand out, checked without the driver library, so the coordinator can
validate settings where the driver is not installed) and a driver module (`<store>.py`:
sync and async connect, describe, and the driver's errors mapped to bgbench's: a store
that cannot be reached on first contact is the user's to fix (`UserError`), later it is a
fault of the store (`StoreError`)). docs/guide/stores.md is the guide.

This package imports only bgbench.errors and bgbench.sdk, never a workload.
"""


def first_line(exc: BaseException) -> str:
    """An exception's message on one line (its type's name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
