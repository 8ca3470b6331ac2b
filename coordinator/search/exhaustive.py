"""Exhaustive: T = T0, T0+1, ... until the first failure (or the maximum).

For small systems and for checking the heuristics: returns (Socialites, the best
passing (T, outcome) or None).
"""

from bgbench.coordinator.search.memo import Memo, Outcome


def exhaustive(
    run: Memo, t0: int = 1, t_max: int = 1 << 30
) -> tuple[int, tuple[int, Outcome] | None]:
    if not 1 <= t0 <= t_max:
        raise ValueError(f"need 1 <= T0 <= max threads, got T0={t0}, max={t_max}")
    last_pass = 0
    for t in range(t0, t_max + 1):
        if not run(t).passed:
            break
        last_pass = t
    return last_pass, run.best_passing()
