"""Finding workloads and their stores by name, through entry points.

A workload registers once, in the group `bgbench.workloads` (name -> its Workload
object); its stores in the group the workload names (`Workload.store_group`), each as a
`StoreSpec` (bgbench/sdk/stores.py) declared in a light module: the coordinator reads a
store's static facts (options model, concurrency, embedded, file options) from its spec
and never imports a binding module, whose driver may not even be installed where the
coordinator runs. Only `binding_class` (and `make_binding`) import the binding, for the
worker. Any installed distribution may add a workload or a store, so one outside this
repository needs no change here. An entry point that names a binding class rather than a
spec is still accepted: its spec is read from the class (loading it imports the binding).
"""

from functools import cache
from importlib.metadata import entry_points
from typing import Any, cast

from pydantic import BaseModel

from bgbench.errors import UserError
from bgbench.sdk import AnyWorkload as Workload
from bgbench.sdk import Concurrency, StoreBinding, StoreSpec

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


def spec(workload: str, store: str) -> StoreSpec:
    """A store's spec: its static facts, without importing its binding (for a spec entry
    point)."""
    eps = {ep.name: ep for ep in entry_points(group=get(workload).store_group)}
    if store not in eps:
        known = ", ".join(sorted(eps)) or "none installed"
        raise UserError(f"unknown store {store!r} for workload {workload}: use one of {known}")
    return _spec_of(eps[store].value, eps[store].load())


def _spec_of(reference: str, loaded: object) -> StoreSpec:
    if isinstance(loaded, StoreSpec):
        return loaded
    cls: Any = loaded  # a binding class named directly (a plugin without a spec)
    return StoreSpec(
        name=str(getattr(cls, "name", reference)),
        binding=reference,
        options=cls.Options,
        concurrency=getattr(cls, "concurrency", "threads"),
        suspends=bool(getattr(cls, "suspends", True)),
        embedded=bool(getattr(cls, "embedded", False)),
        file_options=tuple(getattr(cls, "file_options", ())),
    )


def concurrency(workload: str, store: str) -> Concurrency:
    """How the store's binding runs socialites by default (threads or asyncio tasks)."""
    return spec(workload, store).concurrency


def make_options(workload: str, store: str, options: dict[str, Any]) -> BaseModel:
    """The store's options validated by its spec's model; a refusal is one UserError line
    naming the option."""
    model = spec(workload, store).options
    try:
        return model.model_validate(options)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise UserError(f"store {store!r}: {_first_error(exc)}") from None


def binding_class(workload: str, store: str) -> type[StoreBinding]:
    """The binding class: imports its module and its driver. For load processes only."""
    return cast(type[StoreBinding], spec(workload, store).load_binding())


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
