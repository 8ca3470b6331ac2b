"""The final experiment at the chosen T for the full duration, and the back-off.

If the final experiment fails, halve T until a final one passes, then bisect
between that success and the lowest failure above it. Final experiments go
through their own memo (a different duration is a different experiment).
"""

from dataclasses import dataclass, field

from bgbench.coordinator.search.memo import Memo, Outcome, last_passing


@dataclass
class FinalResult:
    threads: int  # 0 when not even one thread passes for the full duration
    outcome: Outcome | None
    tried: list[int] = field(default_factory=list)  # every T asked for, in order
    backed_off: bool = False

    def describe(self, chosen: int) -> str:
        if not self.backed_off:
            return f"final experiment at T={chosen} passed"
        if self.threads == 0:
            lowest = min(self.tried, default=1)
            return f"final experiment at T={chosen} failed, and so did every T down to {lowest}"
        return (
            f"final experiment at T={chosen} failed; backed off to T={self.threads} "
            f"after trying {', '.join(map(str, self.tried))}"
        )


def final(run: Memo, chosen: int) -> FinalResult:
    if chosen < 1:
        return FinalResult(0, None)
    tried: list[int] = []
    attempt = _Recorded(run, tried)

    first = attempt(chosen)
    if first.passed:
        return FinalResult(chosen, first, tried)
    failed, t = chosen, chosen // 2
    passed = 0
    while t >= 1:
        if attempt(t).passed:
            passed = t
            break
        failed, t = t, t // 2
    if passed == 0:
        return FinalResult(0, None, tried, backed_off=True)
    best = last_passing(_Recorded(run, tried), passed, failed)
    return FinalResult(best, run.known[best], tried, backed_off=True)


class _Recorded:
    """The memo, noting every T asked for in `tried`."""

    def __init__(self, run: Memo, tried: list[int]) -> None:
        self.run, self.tried = run, tried

    def __call__(self, t: int) -> Outcome:
        if t >= self.run.floor:
            self.tried.append(t)
        return self.run(t)
