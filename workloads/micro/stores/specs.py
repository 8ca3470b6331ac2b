"""Micro's stores as specs: the entry points of the group "bgbench.micro_stores"
(pyproject.toml). Light: the coordinator reads these without importing a binding or a
driver library."""

from bgbench.sdk.stores import StoreSpec
from bgbench.workloads.micro.stores import options

STORES = "bgbench.workloads.micro.stores"

SQLITE = StoreSpec(
    name="sqlite", binding=f"{STORES}.sqlite:SQLiteMicroBinding",
    options=options.SQLiteMicroOptions, concurrency="threads", embedded=True,
    file_options=("path",),
)  # fmt: skip
