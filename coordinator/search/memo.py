"""Outcomes of experiments, and the memo every strategy runs them through."""

import math
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Outcome:
    passed: bool
    throughput: float  # actions/s, summed over workers
    reason: str = ""  # why it failed, when it did
    # The throughput's confidence interval, and the samples (each interval's actions/s in
    # the steady windows of every run) a test compares; none: a point, as the paper's.
    low: float = -math.inf
    high: float = math.inf
    samples: tuple[float, ...] = ()
    clear: bool = True  # the SLA verdict is clear at the rating's confidence
    runs: int = 1  # experiments pooled into this outcome

    @property
    def score(self) -> float:
        """Throughput if the SLA held, else -inf: what SoAR maximises."""
        return self.throughput if self.passed else float("-inf")


Experiment = Callable[[int], Outcome]


def last_passing(run: Callable[[int], "Outcome"], passed: int, failed: int) -> int:
    """Binary search between a T that passed (or 0) and a higher T that failed: the
    highest passing T, assuming the SLA holds below some T and fails above it."""
    lo, hi = passed, failed
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if run(mid).passed:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass
class Memo:
    """Runs each T at most once; remembers the order of every request."""

    experiment: Experiment
    known: dict[int, Outcome] = field(default_factory=dict)
    requests: list[int] = field(default_factory=list)  # every T asked for, repeats included
    ran: list[int] = field(default_factory=list)  # the Ts actually run by this memo
    # The lowest T that can run: below it a fragment would get no thread and the load would
    # no longer follow the global Zipfian. Strategies see such T as failing, unrun.
    floor: int = 1

    def __call__(self, threads: int) -> Outcome:
        if threads < 1:
            raise ValueError(f"thread count must be >= 1, got {threads}")
        if threads < self.floor:
            return Outcome(False, 0.0, f"not run: T={threads} is below {self.floor} fragments")
        self.requests.append(threads)
        if threads not in self.known:
            self.known[threads] = self.experiment(threads)
            self.ran.append(threads)
        return self.known[threads]

    @property
    def total(self) -> int:
        return len(self.requests)

    @property
    def unique(self) -> int:
        return len(self.known)

    def best_passing(self) -> tuple[int, Outcome] | None:
        passing = [(t, o) for t, o in self.known.items() if o.passed]
        if not passing:
            return None
        return max(passing, key=lambda p: (p[1].throughput, -p[0]))


def double(run: "Memo", t0: int, t_max: int) -> tuple[int, Outcome]:
    """The paper's doubling from T0 (which passed): while the SLA holds and throughput
    rises; the best T it reached, and its outcome."""
    best_t, best = t0, run(t0)
    t = t0
    while t < t_max:
        t = min(2 * t, t_max)
        o = run(t)
        if not o.passed or o.throughput < best.throughput:
            break
        best_t, best = t, o
    return best_t, best
