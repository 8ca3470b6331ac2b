"""Checks that need no agent: the settings fit together before anything starts."""

import json
import subprocess
import sys
from importlib.metadata import entry_points

from bgbench.coordinator.config import Settings
from bgbench.coordinator.plan import AgentSlot, layout, split_threads
from bgbench.errors import UserError
from bgbench.workloads.bg.zipf import assign_fragments

STORE_GROUP = "bgbench.bg_stores"


def store_names() -> list[str]:
    return sorted(ep.name for ep in entry_points(group=STORE_GROUP))


def check_store(settings: Settings) -> None:
    names = store_names()
    if settings.store.name not in names:
        raise UserError(
            f"invalid config: store.name: unknown store {settings.store.name!r}; "
            f"use one of {', '.join(names)}"
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


def check_fit(settings: Settings, processes_per_agent: list[int]) -> None:
    """Every fragment holds more members than a member has friends, and its threads."""
    caps = settings.agents.capacities or [1.0] * len(processes_per_agent)
    slots = [AgentSlot(p, c) for p, c in zip(processes_per_agent, caps, strict=True)]
    plan = layout(slots)
    db = settings.bg.database
    owner = assign_fragments(db.usercount, settings.bg.workload.zipfianmean, plan.capacities)
    sizes = [int((owner == k).sum()) for k in range(len(plan.capacities))]
    smallest = min(sizes)
    if smallest <= db.friendcountperuser:
        raise UserError(
            f"invalid config: bg.database.usercount: {db.usercount} members over "
            f"{len(sizes)} fragments leaves {smallest} in the smallest, not more than "
            f"friendcountperuser={db.friendcountperuser}; raise usercount or use fewer agents"
        )
    threads = settings.run.threadcount
    for agent_threads, frags in zip(split_threads(threads, caps), plan.fragments, strict=True):
        per_fragment = -(-agent_threads // len(frags))
        if any(per_fragment > sizes[k] for k in frags):
            raise UserError(
                f"invalid config: run.threadcount: {threads} threads put {per_fragment} on a "
                f"fragment of {min(sizes[k] for k in frags)} members; raise usercount"
            )
