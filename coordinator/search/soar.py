"""SoAR: the highest throughput of any experiment that meets the SLA.

Double T from T0 while the SLA holds and throughput rises (paper section G). The
best T so far, T*, brackets the peak in (T*/2, 2T*), which may lie below T*
(Figure 12.e). Probe the slopes at T*-1 and T*+1: if both fall, T* is the peak.
Otherwise bisect on the slope in the half that rises: at m, compare m and m+1 and
keep the side that climbs. A failed experiment scores -inf, so the search stays
within the SLA. Returns (T, throughput) of the best passing experiment seen, or
None when no experiment passed.
"""

from bgbench.coordinator.search.memo import Memo, Outcome, double, last_passing


def soar(run: Memo, t0: int = 1, t_max: int = 1 << 30) -> tuple[int, Outcome] | None:
    if not 1 <= t0 <= t_max:
        raise ValueError(f"need 1 <= T0 <= max threads, got T0={t0}, max={t_max}")
    if not run(t0).passed:
        return _below(run, t0)
    best_t, best = double(run, t0, t_max)
    lo = max(1, best_t // 2)
    hi = min(t_max, 2 * best_t)
    up = run(best_t + 1).score if best_t < hi else float("-inf")
    down = run(best_t - 1).score if best_t > lo else float("-inf")
    if up <= best.score and down <= best.score:
        return run.best_passing()
    lo, hi = (best_t + 1, hi) if up > best.score else (lo, best_t - 1)
    while lo < hi:  # the peak lies in [lo, hi]: climb the slope
        mid = (lo + hi) // 2
        if run(mid + 1).score > run(mid).score:
            lo = mid + 1
        else:
            hi = mid
    run(lo)
    return run.best_passing()


def _below(run: Memo, t0: int) -> tuple[int, Outcome] | None:
    """T0 failed: the best passing T, if any, lies below it (as Socialites would find)."""
    best = last_passing(run, 0, t0)
    return None if best == 0 else soar(run, 1, best)
