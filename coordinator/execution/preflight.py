"""Checks that need no agent: the settings fit together before anything starts."""

import functools
import json
from collections.abc import Sequence

import psutil

from bgbench import extras
from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.configuration.plan import AgentSlot, FragmentLayout, layout, split_threads
from bgbench.errors import UserError
from bgbench.sdk import AnyWorkload as Workload
from bgbench.workloads import registry


def store_names(workload: str = registry.DEFAULT_WORKLOAD) -> list[str]:
    return registry.store_names(workload)


def _workload(settings: Settings) -> Workload:
    return registry.get(settings.workload.name)


def _scale(settings: Settings) -> tuple[str, int]:
    """The workload's size parameter, as `section.path`, and its value."""
    workload = _workload(settings)
    node: object = settings.workload_config
    for part in workload.scale_parameter.split("."):
        node = getattr(node, part)
    return f"{workload.name}.{workload.scale_parameter}", int(node)  # type: ignore[call-overload]


def check_store(settings: Settings, other_names: Sequence[str] = ()) -> None:
    """The store is one of the workload's bindings (`other_names`, the names that select
    no binding, are named in the refusal too), and its options are the binding's."""
    names = store_names(settings.workload.name)
    if settings.store.name not in names:
        raise UserError(
            f"invalid config: store.name: unknown store {settings.store.name!r} for workload "
            f"{settings.workload.name}; use one of {', '.join([*names, *other_names])}"
        )
    options = json.dumps(settings.store.options)
    _check_options(settings.workload.name, settings.store.name, options)
    if not settings.agents.addresses:  # the agents spawned here run this installation
        extras.require_store(settings.store.name)


# Remembered: a campaign checks each of its jobs, most with the same options. A refusal
# raises, so only valid options are remembered.
@functools.lru_cache(maxsize=256)
def _check_options(workload: str, store: str, options: str) -> None:
    # Options are validated by the model the store's spec names (registry.make_options):
    # the coordinator never imports a binding (its driver may not even be installed here).
    try:
        registry.make_options(workload, store, json.loads(options))
    except UserError as exc:
        raise UserError(f"invalid config: {exc}") from None
    except ImportError as exc:  # a plugin's spec (or binding) whose module cannot load
        raise UserError(f"store {store!r} cannot be loaded here: {exc}") from None


def _sizes(
    settings: Settings, processes_per_agent: list[int]
) -> tuple[list[float], FragmentLayout, list[int]]:
    caps = settings.agents.capacities or [1.0] * len(processes_per_agent)
    slots = [AgentSlot(p, c) for p, c in zip(processes_per_agent, caps, strict=True)]
    plan = layout(slots)
    sizes = _workload(settings).fragment_sizes(settings.workload_config, plan.capacities)
    return caps, plan, sizes


def _fits(threads: int, caps: list[float], plan: FragmentLayout, sizes: list[int]) -> bool:
    for agent_threads, frags in zip(split_threads(threads, caps), plan.fragments, strict=True):
        per_fragment = -(-agent_threads // len(frags))
        if any(per_fragment > sizes[k] for k in frags):
            return False
    return True


def max_threads(settings: Settings, processes_per_agent: list[int]) -> int:
    """The largest T whose threads all fit in their fragments (one socialite per entity)."""
    caps, plan, sizes = _sizes(settings, processes_per_agent)
    lo, hi = 1, sum(sizes) + 1  # lo fits, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _fits(mid, caps, plan, sizes) else (lo, mid)
    return lo


def check_fit(settings: Settings, processes_per_agent: list[int]) -> None:
    """Every fragment holds the workload's structure, and its threads."""
    caps, plan, sizes = _sizes(settings, processes_per_agent)
    _workload(settings).check_fragments(settings.workload_config, sizes)
    threads = settings.run.threadcount
    if not _fits(threads, caps, plan, sizes):
        scale, _ = _scale(settings)
        raise UserError(
            f"invalid config: run.threadcount: {threads} threads do not fit in fragments of "
            f"{min(sizes)} (one socialite each); raise {scale}"
        )


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def check_memory(settings: Settings, host_memory: list[tuple[str, int, float]]) -> None:
    """Refuse a database the hosts cannot hold, before anything allocates it.

    host_memory: per host, its name, bytes available, and its share of the database.
    """
    scale, size = _scale(settings)
    coordinator_needs, load_needs = _workload(settings).memory_bytes(settings.workload_config)
    available = psutil.virtual_memory().available
    if coordinator_needs > available // 2:
        raise UserError(
            f"invalid config: {scale}: {size:,} need about {_gib(coordinator_needs)} in the "
            f"coordinator alone, more than half of the {_gib(available)} available here; "
            f"lower {scale.rsplit('.', 1)[-1]}"
        )
    for host, memory, share in host_memory:
        needs = load_needs * share
        if needs > memory:
            raise UserError(
                f"invalid config: {scale}: {size:,} need about {_gib(needs)} on {host} "
                f"({load_needs / max(size, 1):,.0f} B each with these settings), which has "
                f"{_gib(memory)} available; lower {scale.rsplit('.', 1)[-1]} or spread it "
                "over more agent hosts"
            )


def check_local_memory(settings: Settings) -> None:
    """Local agents all live on this machine: together they hold the whole database."""
    check_memory(settings, [("this machine", psutil.virtual_memory().available, 1.0)])


def check_threads_cover(threads: int, fragments: int) -> None:
    if threads < fragments:
        raise UserError(
            f"invalid config: run.threadcount: {threads} threads over {fragments} fragments "
            "leave a fragment without a thread, and the requests would no longer follow the "
            f"global Zipfian; use at least {fragments} (or fewer agents or load processes)"
        )


def check_pacing(settings: Settings) -> None:
    """An open loop paces the load by its arrivals; an inter-arrival time would pace it a
    second way (the agents refuse it too, but only once the database is loaded)."""
    rated_by_rate = settings.run.target_rate or settings.rating.over == "rate"
    if not rated_by_rate:
        return
    gap = registry.get(settings.workload.name).interarrival_ms(settings.workload_config)
    if gap > 0:
        raise UserError(
            f"run.target_rate: an open loop cannot also wait interarrivaltime={gap:g} ms "
            "between a socialite's units: set interarrivaltime to 0 or drop the target rate"
        )
