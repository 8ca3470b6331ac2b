"""Finding workloads and their store bindings by name, through entry points.

A workload registers once, in the group `bgbench.workloads` (name -> its Workload
object); its bindings in the group the workload names (`Workload.store_group`). Any
installed distribution may add either, so a workload outside this repository needs no
change here.

    python -m bgbench.workloads.registry WORKLOAD STORE   # check options (JSON on stdin)

validates store options in a child process, so the coordinator never imports a binding
(whose driver may not be installed where the coordinator runs).
"""

import json
import sys
from functools import cache
from importlib.metadata import entry_points
from typing import Any, cast

from pydantic import BaseModel

from bgbench.errors import UserError
from bgbench.sdk import AnyWorkload as Workload
from bgbench.sdk import StoreBinding

WORKLOAD_GROUP = "bgbench.workloads"
DEFAULT_WORKLOAD = "bg"


def workload_names() -> list[str]:
    return sorted(ep.name for ep in entry_points(group=WORKLOAD_GROUP))


@cache
def get(name: str) -> Workload:
    eps = {ep.name: ep for ep in entry_points(group=WORKLOAD_GROUP)}
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none installed"
        raise UserError(f"unknown workload {name!r}: use one of {known} (see `bgbench stores`)")
    return cast(Workload, eps[name].load())


def store_names(workload: str) -> list[str]:
    return sorted(ep.name for ep in entry_points(group=get(workload).store_group))


def binding_class(workload: str, store: str) -> type[StoreBinding]:
    eps = {ep.name: ep for ep in entry_points(group=get(workload).store_group)}
    if store not in eps:
        known = ", ".join(sorted(eps)) or "none installed"
        raise UserError(f"unknown store {store!r} for workload {workload}: use one of {known}")
    return cast(type[StoreBinding], eps[store].load())


def make_options(workload: str, store: str, options: dict[str, Any]) -> BaseModel:
    cls = binding_class(workload, store)
    try:
        return cls.Options.model_validate(options)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise UserError(f"store {store!r}: {_first_error(exc)}") from None


def make_binding(workload: str, store: str, options: dict[str, Any]) -> StoreBinding:
    """Build a binding from its name and raw options, validating them with its model."""
    cls = binding_class(workload, store)
    return cast(Any, cls)(make_options(workload, store, options))  # type: ignore[no-any-return]


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ()))
        msg = str(first.get("msg", "")).removeprefix("Value error, ")
        return f"store.options.{field}: {msg}" if field else f"store.options: {msg}"
    return str(exc)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m bgbench.workloads.registry WORKLOAD STORE", file=sys.stderr)
        return 2
    try:
        make_options(argv[0], argv[1], json.load(sys.stdin))
    except UserError as exc:
        print(exc, file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"store {argv[1]!r} cannot be loaded here: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
