"""Steady state: which part of an experiment to rate, from its progress stream.

Every agent reports, a few times a second, its cumulative actions and a histogram of
the response times that ended since its last report. Per report interval that gives a
throughput and a share within beta; summed over agents (intervals aligned by their
index: agents tick at the same period from the same start) they are the experiment's
series. A report comes when its agent gets the CPU and says what its load processes had
published by then: a CPU-starved load process publishes late, so the throughput comes
from the actions' own end times when the agents send them (RunResult.ended_per_interval,
counted per interval from the run's start), and from the reports only when they do not.
The warm-up is cut by MSER-5 (White's marginal standard error rule on batches
of five): the cut that minimises the standard error of the mean of what remains. A
cut beyond half the run means the series never settled: the experiment is unstable,
and is not rated. Intervals that end after the experiment's duration (the socialites
finishing their last calls) are not part of the series.
"""

from dataclasses import dataclass

import numpy as np

from bgbench.coordinator.records.metrics import decode, share_within
from bgbench.coordinator.records.stats import compare
from bgbench.run_result import Steadiness

MSER_BATCH = 5
MIN_SAMPLES = 4  # below this the series is too short to test: rated whole
TAIL_SLACK_S = 0.05  # an interval ending this little past the duration is still in it
NEAR_BEST = 1.5  # the earliest cut whose MSER is this close to the least is taken
DRIFT = 0.2  # a steady window's halves differ by less than this share of its mean


@dataclass
class Ended:
    """One agent's actions ended per interval of its run, by their own end times."""

    counts: list[int]
    interval_s: float
    elapsed_s: float  # how long its run went on (the counts stop there)


@dataclass
class Tick:
    """One progress report of one agent."""

    elapsed_s: float
    actions: int  # cumulative
    ended: int = 0  # actions that ended since the last report (its histogram's count)
    within: int = 0  # of those, within beta


def mser_cut(series: list[float] | np.ndarray, confidence: float = 0.95) -> tuple[int, bool]:
    """(samples to cut, whether what remains is steady).

    MSER-5 picks the cut within the first half (the earliest near its minimum); it is
    kept only when the part cut differs from the rest by a test (on a stationary series
    MSER's minimum falls anywhere, and cutting it would only throw samples away). What
    remains is unstable when its two halves differ by a test and by more than DRIFT of
    its mean: a store still warming or degrading, not noise."""
    x = np.asarray(series, dtype=np.float64)
    n = len(x)
    if n < MIN_SAMPLES:
        return 0, True
    batch = MSER_BATCH if n >= 4 * MSER_BATCH else 1
    k = n // batch
    z = x[: k * batch].reshape(k, batch).mean(axis=1)
    scores = [float(np.var(z[d:])) / (k - d) for d in range(k // 2 + 1)]
    best = min(scores)
    cut = next(d for d, v in enumerate(scores) if v <= NEAR_BEST * best) * batch
    if cut and compare(x[:cut], x[cut:], confidence) == 0:
        cut = 0
    rest = x[cut:]
    first, second = rest[: len(rest) // 2], rest[len(rest) // 2 :]
    drift = abs(float(second.mean()) - float(first.mean()))
    steady = compare(first, second, confidence) == 0 or drift <= DRIFT * abs(float(rest.mean()))
    return cut, steady


def _agent_series(
    ticks: list[Tick], duration_s: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One agent's ticks as series: its rate, its within-beta and ended counts per
    interval, and the intervals' spans (ticks past the run's end left out)."""
    times = np.array([0.0] + [t.elapsed_s for t in ticks])
    actions = np.array([0] + [t.actions for t in ticks], dtype=np.float64)
    keep = times[1:] <= duration_s + TAIL_SLACK_S
    spans = np.diff(times)[keep]
    rate = np.divide(np.diff(actions)[keep], spans, where=spans > 0, out=np.zeros(keep.sum()))
    within = np.array([t.within for t in ticks], dtype=np.float64)[keep]
    ended = np.array([t.ended for t in ticks], dtype=np.float64)[keep]
    return rate, within, ended, spans


def _ended_rate(ended: Ended, duration_s: float) -> np.ndarray:
    """Actions/s per interval of one agent's run, the intervals that end within the run
    (and within the time its load processes ran): zeros where no action ended."""
    span = min(duration_s, ended.elapsed_s) + TAIL_SLACK_S
    n = int(span / ended.interval_s + 1e-9)
    counts = np.zeros(n, dtype=np.float64)
    kept = ended.counts[:n]
    counts[: len(kept)] = kept
    rate: np.ndarray = counts / ended.interval_s
    return rate


def _padded(series: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.float64)
    out[: min(n, len(series))] = series[:n]
    return out


def _summed(series: list[np.ndarray], n: int) -> np.ndarray:
    """The agents' series added up over their first n intervals."""
    return np.sum([s[:n] for s in series], axis=0) if n else np.zeros(0)


def _run_totals(agents: list[list[Tick]]) -> tuple[int, int, int]:
    """(actions, within beta, ended) of the whole run, over every agent."""
    actions = sum(ticks[-1].actions for ticks in agents if ticks)
    within = sum(t.within for ticks in agents for t in ticks)
    ended = sum(t.ended for ticks in agents for t in ticks)
    return actions, within, ended


def _cut(out: "Steadiness", throughput: np.ndarray, within: np.ndarray, confidence: float) -> None:
    """The warm-up cut: the later of the rate's and the latency share's."""
    by_rate, settled = mser_cut(throughput, confidence)
    by_latency, latency_settled = mser_cut(np.nan_to_num(within, nan=100.0), confidence)
    out.cut = max(by_rate, by_latency)
    out.stable = settled and latency_settled


def analyse(
    agents: list[list[Tick]],
    duration_s: float,
    cut: bool,
    confidence: float = 0.95,
    ended_by_agent: list[Ended] | None = None,
) -> Steadiness:
    """The series of an experiment from its agents' ticks, and its steady window (the whole
    run when `cut` is off). With every agent's `Ended` counts, the throughput comes from
    them (the share within beta from the ticks, interval by interval alongside)."""
    series = [_agent_series(ticks, duration_s) for ticks in agents]
    run_actions, run_within, run_ended = _run_totals(agents)
    if ended_by_agent and all(e.interval_s > 0 for e in ended_by_agent):
        rates = [_ended_rate(e, duration_s) for e in ended_by_agent]
        n = min(len(r) for r in rates)
        throughput = _summed(rates, n)
        within_hits = _summed([_padded(s[1], n) for s in series], n)
        ended = _summed([_padded(s[2], n) for s in series], n)
        interval = float(np.median([e.interval_s for e in ended_by_agent]))
    else:
        spacings = [float(v) for s in series for v in s[3]]
        n = min((len(s[0]) for s in series), default=0)
        throughput = _summed([s[0] for s in series], n)
        within_hits = _summed([s[1] for s in series], n)
        ended = _summed([s[2] for s in series], n)
        interval = float(np.median(spacings)) if spacings else 0.0
    within = np.where(ended > 0, 100.0 * within_hits / np.maximum(ended, 1), np.nan)
    out = Steadiness(
        interval_s=interval,
        throughput=[float(v) for v in throughput],
        within=[float(v) if v == v else None for v in within],
        run_actions_per_s=run_actions / duration_s if duration_s else 0.0,
        run_within_percent=100.0 * run_within / run_ended if run_ended else 100.0,
        tested=n >= MIN_SAMPLES,
    )
    if cut and n >= MIN_SAMPLES:
        _cut(out, throughput, within, confidence)
    out.warmup_s = out.cut * interval
    out.window_s = (n - out.cut) * interval
    return out


def window_within_counts(ticks: list[Tick], steady: Steadiness) -> tuple[int, int]:
    """(within beta, ended) of one agent's ticks in the steady window."""
    rows = ticks[steady.cut : len(steady.throughput)]
    return sum(t.within for t in rows), sum(t.ended for t in rows)


def tick_of(elapsed_s: float, actions: int, delta: bytes, bound_us: float) -> Tick:
    """A progress report as a tick: its histogram delta reduced to (ended, within)."""
    if not delta:
        return Tick(elapsed_s, actions)
    h = decode(delta)
    ended = int(h.get_total_count())
    within = round(share_within(h, bound_us) * ended / 100) if ended else 0
    return Tick(elapsed_s, actions, ended, within)
