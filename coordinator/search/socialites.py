"""Socialites: the highest T that meets the SLA.

Double T from T0 until an experiment fails, then binary-search the last interval
(paper section G). If T0 itself fails, search below it. Returns 0 when even one
thread fails the SLA.
"""

from bgbench.coordinator.search.memo import Memo, last_passing


def socialites(run: Memo, t0: int = 1, t_max: int = 1 << 30) -> int:
    if not 1 <= t0 <= t_max:
        raise ValueError(f"need 1 <= T0 <= max threads, got T0={t0}, max={t_max}")
    passed, failed = 0, None
    t = t0
    while True:
        if run(t).passed:
            passed = t
            if t >= t_max:
                return t
            t = min(2 * t, t_max)
        else:
            failed = t
            break
    return last_passing(run, passed, failed)
