"""How many local agents and load processes a run gets when the user does not say.

One load process runs one fragment, and every fragment needs at least one socialite,
so the layout is fixed before loading: for a rating from the cores alone (one load
process per core, spread over the local agents); for a single run also from its T: a
store whose driver blocks runs at most THREADS_PER_PROCESS threads per process (up to
PROCESSES_PER_CORE per core) because threads in one interpreter add CPU per action, not
throughput, while tasks on an event loop are cheap. The layout chosen is recorded with
the settings of every experiment.
"""

import os

from bgbench.coordinator.configuration.config import Settings
from bgbench.workloads import registry

THREADS_PER_PROCESS = 64
PROCESSES_PER_CORE = 4


def store_concurrency(workload: str, store: str) -> str:
    if store not in registry.store_names(workload):
        return "threads"  # the store check names the unknown store
    return registry.concurrency(workload, store)  # from the store's spec: no binding imported


def resolve_local_layout(settings: Settings, threads: int | None) -> None:
    """Make agents.local and agents.processes concrete (for local agents)."""
    a = settings.agents
    if a.addresses:
        if a.processes == "auto":
            a.processes = 1
        return
    cores = os.cpu_count() or 1
    if threads is not None and "local" not in a.model_fields_set and threads < a.local:
        a.local = threads  # `run --threads 1`: one agent, one fragment
    if a.processes != "auto":
        return
    share = max(1, cores // a.local)
    processes = share
    if threads is not None:
        per_agent = -(-threads // a.local)
        if store_concurrency(settings.workload.name, settings.store.name) == "threads":
            wanted = -(-per_agent // THREADS_PER_PROCESS)
            processes = min(PROCESSES_PER_CORE * share, max(share, wanted))
        processes = max(1, min(processes, threads // a.local))
    a.processes = processes
