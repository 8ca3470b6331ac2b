"""Checks that need no agent: the settings fit together before anything starts."""

import json
import subprocess
import sys
from importlib.metadata import entry_points

import psutil

from bgbench.coordinator.config import Settings
from bgbench.coordinator.plan import AgentSlot, layout, split_threads
from bgbench.errors import UserError
from bgbench.workloads.bg.zipf import assign_fragments

STORE_GROUP = "bgbench.bg_stores"


def store_names() -> list[str]:
    return sorted(ep.name for ep in entry_points(group=STORE_GROUP))


MODEL_STORE = "model"  # the simulated store of coordinator/model_store.py, not a binding


def check_store(settings: Settings) -> None:
    if settings.store.name == MODEL_STORE:
        return
    names = store_names()
    if settings.store.name not in names:
        raise UserError(
            f"invalid config: store.name: unknown store {settings.store.name!r}; "
            f"use one of {', '.join([*names, MODEL_STORE])}"
        )
    # Options are validated by the binding's own model, in a child process: the
    # coordinator never imports a binding (its driver may not even be installed here).
    proc = subprocess.run(
        [sys.executable, "-m", "bgbench.workloads.bg.check_options", settings.store.name],
        input=json.dumps(settings.store.options),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode == 2:
        raise UserError(f"invalid config: {proc.stderr.strip()}")
    if proc.returncode != 0:
        raise UserError(proc.stderr.strip() or "store options could not be checked")


def _sizes(settings: Settings, processes_per_agent: list[int]):
    caps = settings.agents.capacities or [1.0] * len(processes_per_agent)
    slots = [AgentSlot(p, c) for p, c in zip(processes_per_agent, caps, strict=True)]
    plan = layout(slots)
    db = settings.bg.database
    owner = assign_fragments(db.usercount, settings.bg.workload.zipfianmean, plan.capacities)
    sizes = [int((owner == k).sum()) for k in range(len(plan.capacities))]
    return caps, plan, sizes


def _fits(threads: int, caps: list[float], plan, sizes: list[int]) -> bool:
    for agent_threads, frags in zip(split_threads(threads, caps), plan.fragments, strict=True):
        per_fragment = -(-agent_threads // len(frags))
        if any(per_fragment > sizes[k] for k in frags):
            return False
    return True


def max_threads(settings: Settings, processes_per_agent: list[int]) -> int:
    """The largest T whose threads all fit in their fragments (one socialite per member)."""
    caps, plan, sizes = _sizes(settings, processes_per_agent)
    lo, hi = 1, settings.bg.database.usercount + 1  # lo fits, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _fits(mid, caps, plan, sizes) else (lo, mid)
    return lo


def check_fit(settings: Settings, processes_per_agent: list[int]) -> None:
    """Every fragment holds more members than a member has friends, and its threads."""
    caps, plan, sizes = _sizes(settings, processes_per_agent)
    db = settings.bg.database
    smallest = min(sizes)
    if smallest <= db.friendcountperuser:
        raise UserError(
            f"invalid config: bg.database.usercount: {db.usercount} members over "
            f"{len(sizes)} fragments leaves {smallest} in the smallest, not more than "
            f"friendcountperuser={db.friendcountperuser}; raise usercount or use fewer agents"
        )
    threads = settings.run.threadcount
    if not _fits(threads, caps, plan, sizes):
        raise UserError(
            f"invalid config: run.threadcount: {threads} threads do not fit in fragments of "
            f"{min(sizes)} members (one socialite per member); raise usercount"
        )


# What one member costs in a load process (generator plus BG's picture of the fragment),
# measured with benchmarks-style runs: about 120 B + 170 B per relationship + 300 B per
# resource; rounded up so the estimate errs on the side of refusing.
MEMBER_BYTES = 200
RELATIONSHIP_BYTES = 200
RESOURCE_BYTES = 320
COMMENT_BYTES = 16
COORDINATOR_MEMBER_BYTES = 16  # the fragment layout: a few arrays over all members


def bytes_per_member(settings: Settings) -> int:
    db = settings.bg.database
    return (
        MEMBER_BYTES
        + RELATIONSHIP_BYTES * db.friendcountperuser
        + db.resourcecountperuser * (RESOURCE_BYTES + COMMENT_BYTES * db.commentcountperresource)
    )


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def check_memory(settings: Settings, host_memory: list[tuple[str, int, float]]) -> None:
    """Refuse a database the hosts cannot hold, before anything allocates it.

    host_memory: per host, its name, bytes available, and its share of the members.
    """
    db = settings.bg.database
    coordinator_needs = db.usercount * COORDINATOR_MEMBER_BYTES
    available = psutil.virtual_memory().available
    if coordinator_needs > available // 2:
        raise UserError(
            f"invalid config: bg.database.usercount: {db.usercount:,} members need about "
            f"{_gib(coordinator_needs)} in the coordinator alone, more than half of the "
            f"{_gib(available)} available here; lower usercount"
        )
    per_member = bytes_per_member(settings)
    for host, memory, share in host_memory:
        needs = db.usercount * share * per_member
        if needs > memory:
            raise UserError(
                f"invalid config: bg.database.usercount: {db.usercount:,} members need about "
                f"{_gib(needs)} on {host} ({per_member:,} B per member with these friend, "
                f"resource and comment counts), which has {_gib(memory)} available; lower "
                "usercount or spread it over more agent hosts"
            )


def check_local_memory(settings: Settings) -> None:
    """Local agents all live on this machine: together they hold every member."""
    check_memory(settings, [("this machine", psutil.virtual_memory().available, 1.0)])


def check_threads_cover(threads: int, fragments: int) -> None:
    if threads < fragments:
        raise UserError(
            f"invalid config: run.threadcount: {threads} threads over {fragments} fragments "
            "leave a fragment without a thread, and the requests would no longer follow the "
            f"global Zipfian; use at least {fragments} (or fewer agents or load processes)"
        )


def check_before_agents(settings: Settings) -> None:
    """What can be checked before any agent answers (listed agents' processes are unknown)."""
    if settings.store.name == MODEL_STORE:
        return
    check_store(settings)
    if not settings.agents.addresses:
        from bgbench.coordinator.sizing import resolve_local_layout  # it needs this module

        resolve_local_layout(settings, None)
        check_local_memory(settings)
        check_fit(settings, [settings.agents.processes] * settings.agents.local)
    else:
        check_memory(settings, [])  # the coordinator's own share; agents' after the handshake
