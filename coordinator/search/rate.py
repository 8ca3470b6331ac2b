"""The open-loop search: the highest arrival rate (actions/s) whose experiment meets the SLA.

Double the rate from the first while the SLA holds, then bisect geometrically between the
last rate that passed and the first that failed until they are within `resolution` of
each other. Rates are whole actions/s, the memo's keys.
"""

import math

from bgbench.coordinator.search.memo import Memo, Outcome

MAX_RATE = 100_000_000


def max_rate(run: Memo, first: int, resolution: float) -> tuple[int, Outcome] | None:
    if first < 1:
        raise ValueError(f"the first rate must be >= 1 action/s, got {first}")
    passed, failed = 0, 0
    r = first
    while r <= MAX_RATE:
        if not run(r).passed:
            failed = r
            break
        passed, r = r, 2 * r
    if passed == 0:  # the first already fails: halve until one passes
        r = first // 2
        while r >= 1 and not run(r).passed:
            failed, r = r, r // 2
        if r < 1:
            return None
        passed = r
    if failed == 0:
        return passed, run.known[passed]
    while failed > passed * (1 + resolution) and failed - passed > 1:
        mid = round(math.sqrt(passed * failed))
        mid = min(max(mid, passed + 1), failed - 1)
        if run(mid).passed:
            passed = mid
        else:
            failed = mid
    return passed, run.known[passed]
