"""A store binding's static facts, declared where the coordinator can read them.

A workload lists one `StoreSpec` per store in a light module (no driver library, no
binding module imported) and registers each as an entry point of its store group, e.g.

    [project.entry-points."bgbench.bg_stores"]
    sqlite = "bgbench.workloads.bg.stores.specs:SQLITE"

The coordinator validates options with `spec.options`, sizes load processes from
`spec.concurrency` and confines `spec.file_options`, all without importing the binding;
only a load process imports `spec.binding` ("module:Class") to run it.
"""

import importlib
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from bgbench.sdk.workload import Concurrency


@dataclass(frozen=True)
class StoreSpec:
    name: str
    # the binding class as "package.module:Class": imported by load processes only
    binding: str
    # the pydantic model of `store.options` (importable without the driver library)
    options: type[BaseModel]
    # "asyncio": socialites are tasks on one event loop per load process;
    # "threads": one OS thread per socialite, for drivers that only block
    concurrency: Concurrency = "threads"
    # False when calls return without ever suspending the task (the null store)
    suspends: bool = True
    # True when the store runs inside the load process (SQLite): its CPU is the client's
    embedded: bool = False
    # options that name files (SQLite's "path"): a remote agent keeps them in its work dir
    file_options: tuple[str, ...] = ()

    def load_binding(self) -> type[Any]:
        """The binding class: imports its module (and so its driver). Load processes only."""
        module, _, attr = self.binding.partition(":")
        cls: type[Any] = getattr(importlib.import_module(module), attr)
        return cls


class BlockingBinding:
    """Defaults for a binding whose driver only blocks: socialites are threads, each closes
    its own connection, nothing is shared to close, no counters. A subclass gives `name`,
    `Options`, `connect` and `describe` (and `embedded`, `file_options` when they apply)."""

    concurrency: ClassVar[Concurrency] = "threads"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    file_options: ClassVar[tuple[str, ...]] = ()

    async def connect_async(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} runs socialites as threads")

    async def aclose(self) -> None:
        """Nothing shared to close."""

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        """Each socialite closed its own connection."""
