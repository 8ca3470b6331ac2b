"""Which kind of target a store name selects: a simulated store by its name, any other
name a store binding that agents drive. The one place that tells them apart."""

from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.execution.model_store import MODEL_STORE, ModelKind
from bgbench.coordinator.execution.session import AgentsKind
from bgbench.coordinator.execution.target import TargetKind

SIMULATED: dict[str, TargetKind] = {MODEL_STORE: ModelKind()}
AGENTS: TargetKind = AgentsKind(list(SIMULATED))


def simulated_store_names() -> list[str]:
    """Store names that select a simulation rather than a binding (any workload has them)."""
    return list(SIMULATED)


def target_kind(settings: Settings) -> TargetKind:
    return SIMULATED.get(settings.store.name, AGENTS)
