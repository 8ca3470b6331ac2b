"""Fragment assignment and thread split: pure functions, tested exhaustively.

Each agent runs one load process per fragment. An agent's capacity weight is
shared equally by its load processes, so fragment k's weight is its agent's
capacity over the agent's process count; D-Zipfian then sizes fragments so
their popularity mass matches those weights.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class AgentSlot:
    processes: int
    capacity: float = 1.0


@dataclass(frozen=True)
class FragmentLayout:
    capacities: tuple[float, ...]  # one per fragment of the database
    fragments: tuple[tuple[int, ...], ...]  # fragment ids of each agent


def layout(agents: list[AgentSlot]) -> FragmentLayout:
    if not agents:
        raise ValueError("at least one agent is needed")
    capacities: list[float] = []
    fragments: list[tuple[int, ...]] = []
    for agent in agents:
        if agent.processes < 1 or agent.capacity <= 0:
            raise ValueError("every agent needs >= 1 load process and a positive capacity")
        first = len(capacities)
        capacities.extend([agent.capacity / agent.processes] * agent.processes)
        fragments.append(tuple(range(first, len(capacities))))
    return FragmentLayout(tuple(capacities), tuple(fragments))


def split_threads(total: int, weights: list[float]) -> list[int]:
    """Largest-remainder split of `total` threads in proportion to `weights`."""
    if total < 0:
        raise ValueError("thread count must be >= 0")
    if not weights or any(w <= 0 for w in weights):
        raise ValueError("weights must be positive")
    s = sum(weights)
    exact = [total * w / s for w in weights]
    shares = [int(x) for x in exact]
    left = total - sum(shares)
    order = sorted(range(len(weights)), key=lambda i: (shares[i] - exact[i], i))
    for i in order[:left]:
        shares[i] += 1
    return shares
