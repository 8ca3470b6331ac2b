"""SoAR by fitting: double T as the paper does, then probe where a parabola through the
best point and its known neighbours puts the peak.

After the doubling, the best passing T (b) lies between its nearest known neighbours a
and c. While both passed, the next probe is the vertex of the parabola through the
three; it stops when that vertex is b itself, when b's neighbours are adjacent integers,
or when a test cannot tell b's throughput from either neighbour's (the curve is flat
within the noise there, and no probe could resolve it). When a neighbour failed the
SLA (or none is known), or the fit is unusable, the probe is a golden-section step into
the wider side, so the search still closes in on the peak or the SLA's edge. Every
probe goes through the memo, so a T is never run twice and the classic search's
doubling is the fallback the fit starts from.
"""

from bgbench.coordinator.records.stats import compare
from bgbench.coordinator.search.memo import Memo, Outcome, double, last_passing

MAX_PROBES = 12  # after the doubling
GOLDEN = 0.382


def soar_fit(
    run: Memo, t0: int = 1, t_max: int = 1 << 30, confidence: float = 0.95
) -> tuple[int, Outcome] | None:
    if not 1 <= t0 <= t_max:
        raise ValueError(f"need 1 <= T0 <= max threads, got T0={t0}, max={t_max}")
    if not run(t0).passed:  # the best passing T, if any, lies below T0
        edge = last_passing(run, 0, t0)
        return None if edge == 0 else soar_fit(run, max(1, min(run.floor, edge)), edge, confidence)
    double(run, t0, t_max)
    for _ in range(MAX_PROBES):
        probe = next_probe(run, t_max, confidence)
        if probe is None:
            break
        run(probe)
    return run.best_passing()


def next_probe(run: Memo, t_max: int, confidence: float) -> int | None:
    """The next T to try around the best passing one, or None when the search is done."""
    top = run.best_passing()
    if top is None:
        return None
    b, ob = top
    below = [t for t in run.known if t < b]
    above = [t for t in run.known if t > b]
    a = max(below) if below else max(0, run.floor - 1)
    c = min(above) if above else t_max + 1
    if c - a <= 2:
        return None
    oa, oc = run.known.get(a), run.known.get(c)
    if oa is not None and oc is not None and oa.passed and oc.passed:
        if _flat(ob, oa, oc, confidence):
            return None  # flat within the noise over [a, c]
        v = vertex(a, oa.throughput, b, ob.throughput, c, oc.throughput)
        t = None if v is None else round(v)
        if t == b:
            return None
        if t is not None and a < t < c and t not in run.known:
            return t
    return _golden(run, a, b, c)


def _flat(ob: Outcome, oa: Outcome, oc: Outcome, confidence: float) -> bool:
    """The best passing T's throughput differs from neither neighbour's beyond the noise."""
    if not (ob.samples and oa.samples and oc.samples):
        return False
    return (
        compare(ob.samples, oa.samples, confidence) == 0
        and compare(ob.samples, oc.samples, confidence) == 0
    )


def _golden(run: Memo, a: int, b: int, c: int) -> int | None:
    sides = [(c - b, 1), (b - a, -1)]
    sides.sort(reverse=True)
    for gap, sign in sides:
        if gap <= 1:
            continue
        t = b + sign * max(1, round(GOLDEN * gap))
        if t not in run.known and a < t < c:
            return t
    return None


def vertex(x1: float, y1: float, x2: float, y2: float, x3: float, y3: float) -> float | None:
    """x of the vertex of the parabola through three points, if it opens downwards."""
    num = (x2 - x1) ** 2 * (y2 - y3) - (x2 - x3) ** 2 * (y2 - y1)
    den = (x2 - x1) * (y2 - y3) - (x2 - x3) * (y2 - y1)
    if den == 0:
        return None
    # y2 at least both neighbours makes the parabola concave (or flat)
    if y2 < y1 or y2 < y3:
        return None
    return x2 - 0.5 * num / den
