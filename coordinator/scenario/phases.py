"""A scenario's phases: the progress streams cut at each step, figures per phase.

Each agent reports, every half second, its cumulative counts and a histogram of the
response times that ended since its last report. The recorder turns each report into
one interval of that agent, places it on the coordinator's clock (the agent's run start
estimated as the least `received - elapsed` of its reports: a report is never received
before it is sent) and gives the whole interval to the phase its midpoint falls in.
Intervals of all agents with the same index (they tick at the same period from the same
start) make one point of the timeline; their histograms are merged for its p95 and
dropped once every agent has reported it, so memory stays bounded by the agents, not the
run's length. Per phase the histograms are merged as they come.

Time to recover is measured on the timeline from the phase's start: until throughput is
at least RECOVERED_SHARE of the baseline's (phase 0's) and, separately, until the SLA
holds (alpha within beta and no errors), each over RECOVERY_HOLD consecutive intervals.
Reads and unpredictable reads per phase come from the agents' validations, each read in
the phase its start falls in (phase_starts_for gives each agent its phases' starts on
its own clock).
"""

import bisect
import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.records.metrics import (
    LatencySummary,
    decode,
    judge,
    new_histogram,
    percentile,
    share_within,
)
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result.scenario import PhaseFigures, ScenarioFigures, StepRecord, Timeline

RECOVERED_SHARE = 0.9  # throughput back to this share of the baseline's
RECOVERY_HOLD = 3  # consecutive intervals a recovery must hold
MIN_SPAN_S = 0.1  # shorter intervals (an agent's final report) count in the phase, not the timeline
# An interval is settled (given to its phase, drawn) once every agent is this many past it:
# by then its agent's clock is better known and a step that started in it is registered.
SETTLE_AFTER = 2
MAX_LEAD = 8  # intervals the fastest agent may lead before the slowest's are not waited for
MAX_BINS = 7200  # the validator's series bins an agent sends at most
MAX_POINTS = 7200  # timeline points kept with the result (an hour at 0.5 s; longer: merged)
BASELINE = "baseline"


@dataclass
class _Part:
    """One agent's one interval, on its own clock."""

    agent: int
    begin: float  # elapsed seconds at the previous report
    end: float
    successes: int
    errors: int
    timeouts: int
    hist: HdrHistogram | None


@dataclass
class _Totals:
    """A phase's running sums."""

    actions: int = 0
    errors: int = 0
    timeouts: int = 0
    hist: HdrHistogram = field(default_factory=new_histogram)
    successes: dict[int, int] = field(default_factory=dict)  # per agent
    span: dict[int, float] = field(default_factory=dict)  # per agent: seconds it covered

    def throughput(self) -> float:
        return sum(n / self.span[a] for a, n in self.successes.items() if self.span[a] > 0)


@dataclass
class _Point:
    """One timeline interval over all agents, on the experiment's clock."""

    end: float
    span: float
    throughput: float
    errors_per_s: float
    p95_ms: float | None
    within: float | None
    errors: int

    @property
    def begin(self) -> float:
        return self.end - self.span


class ScenarioRecorder:
    """Figures per phase from the agents' progress, fed as it arrives (thread-safe)."""

    def __init__(
        self,
        agents: int | Sequence[object],
        settings: Settings,
        started: float | None = None,
        duration_s: float | None = None,
    ) -> None:
        self.agents = agents if isinstance(agents, int) else len(agents)
        self.sla = settings.sla
        self.bound_us = settings.sla.beta_ms * 1000
        self.started = time.monotonic() if started is None else started
        self.duration_s = duration_s
        self._lock = threading.Lock()
        self._origin: list[float | None] = [None] * self.agents
        self._last: list[tuple[float, int, int, int]] = [(0.0, 0, 0, 0)] * self.agents
        self._next_index = [0] * self.agents
        self._pending: dict[int, list[_Part]] = {}
        self._done_below = 0  # intervals below this index are on the timeline
        self._boundaries: list[float] = []  # phase i + 1 starts at _boundaries[i] (monotonic)
        self._opened_by: list[int] = []  # the step index that opened phase i + 1
        self._phases: list[_Totals] = [_Totals()]
        self._points: list[_Point] = []

    @property
    def series_bin_s(self) -> float:
        """The validator's bin for reads per second: 1 s, longer for runs over MAX_BINS s."""
        if not self.duration_s:
            return 1.0
        return float(max(1, math.ceil(self.duration_s / MAX_BINS)))

    def boundary(self, step_index: int, at_monotonic: float) -> None:
        """A step started: a new phase begins."""
        with self._lock:
            at = max(at_monotonic, self._boundaries[-1] if self._boundaries else at_monotonic)
            self._boundaries.append(at)
            self._opened_by.append(step_index)
            self._phases.append(_Totals())

    def phase_starts_for(self, agent: int) -> list[float]:
        """Offsets from that agent's run start at which phases 1, 2, ... begin."""
        with self._lock:
            origin = self._origin[agent]
            zero = self.started if origin is None else origin
            return [max(0.0, b - zero) for b in self._boundaries]

    def progress(self, agent: int, received_monotonic: float, p: pb.Progress) -> None:
        """One progress report of one agent (cumulative counts, the interval's histogram)."""
        timeouts = p.timeouts
        with self._lock:
            origin = received_monotonic - p.elapsed_seconds
            current = self._origin[agent]
            self._origin[agent] = origin if current is None else min(current, origin)
            begin, actions, errors, timed_out = self._last[agent]
            self._last[agent] = (p.elapsed_seconds, p.actions, p.errors, timeouts)
            done, failed = max(0, p.actions - actions), max(0, p.errors - errors)
            part = _Part(
                agent,
                begin,
                max(begin, p.elapsed_seconds),
                max(0, done - failed),
                failed,
                max(0, timeouts - timed_out),
                decode(p.response_hist_delta) if p.response_hist_delta else None,
            )
            index = self._next_index[agent]
            self._next_index[agent] = index + 1
            if index < self._done_below:  # a straggler: its interval is already drawn
                self._into_phase(part)
                return
            self._pending.setdefault(index, []).append(part)
            ready = max(min(self._next_index) - SETTLE_AFTER, max(self._next_index) - MAX_LEAD)
            while self._done_below < ready:
                self._settle(self._done_below)

    def finish(
        self,
        steps: Sequence[StepRecord],
        validations: Sequence[pb.ValidateReply | BaseException | None] = (),
    ) -> ScenarioFigures:
        """The scenario's figures: the steps as they ran, the phases, the timeline."""
        with self._lock:
            while self._pending:
                self._settle(self._done_below)
            figures = self._figures(list(steps))
        _add_reads(figures, [v for v in validations if isinstance(v, pb.ValidateReply)])
        for phase in figures.phases:
            verdict = judge(
                phase.within_percent, phase.unpredictable_percent, phase.errors, False, self.sla
            )
            if phase.unavailable_s > 0:  # what never ended is not in the latency share
                verdict.reasons.append(
                    f"unavailable: {phase.unavailable_s:.1f} s with no successful action"
                )
            phase.meets_sla, phase.reasons = not verdict.reasons, verdict.reasons
        return figures

    def _clock(self, part: _Part) -> tuple[float, float]:
        """The part's interval on the coordinator's monotonic clock."""
        origin = self._origin[part.agent]
        zero = self.started if origin is None else origin
        return zero + part.begin, zero + part.end

    def _phase_at(self, moment: float) -> int:
        return bisect.bisect_right(self._boundaries, moment)

    def _into_phase(self, part: _Part) -> None:
        begin, end = self._clock(part)
        totals = self._phases[self._phase_at((begin + end) / 2)]
        totals.actions += part.successes + part.errors
        totals.errors += part.errors
        totals.timeouts += part.timeouts
        totals.successes[part.agent] = totals.successes.get(part.agent, 0) + part.successes
        totals.span[part.agent] = totals.span.get(part.agent, 0.0) + (end - begin)
        if part.hist is not None:
            totals.hist.add(part.hist)

    def _settle(self, index: int) -> None:
        """Interval `index` of every agent that reported it: into its phases and, as one
        point, onto the timeline."""
        parts = self._pending.pop(index, [])
        self._done_below = index + 1
        if not parts:
            return
        merged = new_histogram()
        throughput = errors_per_s = 0.0
        ends, spans = [], []
        for part in parts:
            self._into_phase(part)
            begin, end = self._clock(part)
            span = end - begin
            if part.hist is not None:
                merged.add(part.hist)
            if span > 0:
                throughput += part.successes / span
                errors_per_s += part.errors / span
            ends.append(end - self.started)
            spans.append(span)
        span = statistics.median(spans)
        if span < MIN_SPAN_S:
            return
        ended = merged.get_total_count()
        self._points.append(
            _Point(
                end=statistics.median(ends),
                span=span,
                throughput=throughput,
                errors_per_s=errors_per_s,
                p95_ms=percentile(merged, 95) / 1000 if ended else None,
                within=share_within(merged, self.bound_us) if ended else None,
                errors=sum(p.errors for p in parts),
            )
        )

    def _figures(self, steps: list[StepRecord]) -> ScenarioFigures:
        by_index = {s.index: s for s in steps}
        starts = [0.0] + [b - self.started for b in self._boundaries]
        last = self._points[-1].end if self._points else 0.0
        end_of_run = self.duration_s if self.duration_s else last
        ends = [*starts[1:], max(end_of_run, starts[-1])]
        phases = []
        for i, totals in enumerate(self._phases):
            opener = by_index.get(self._opened_by[i - 1]) if i else None
            label = BASELINE if i == 0 else (opener.text if opener else f"step {i}")
            summary = LatencySummary.of(totals.hist)
            phases.append(
                PhaseFigures(
                    index=i,
                    label=label,
                    start_s=starts[i],
                    end_s=ends[i],
                    actions=totals.actions,
                    errors=totals.errors,
                    timeouts=totals.timeouts,
                    actions_per_s=totals.throughput(),
                    p50_ms=summary.p50_ms,
                    p95_ms=summary.p95_ms,
                    p99_ms=summary.p99_ms,
                    within_percent=share_within(totals.hist, self.bound_us),
                )
            )
        self._timeline_figures(phases)
        points = _coarser(self._points)
        timeline = Timeline(
            interval_s=statistics.median([p.span for p in points]) if points else 0.0,
            t_s=[round(p.end, 3) for p in points],
            throughput=[p.throughput for p in points],
            p95_ms=[p.p95_ms for p in points],
            errors_per_s=[p.errors_per_s for p in points],
            within=[p.within for p in points],
            bin_s=self.series_bin_s,
            bin_start_s=round(self._run_start(), 3),
        )
        return ScenarioFigures(steps, phases, timeline)

    def _run_start(self) -> float:
        """Where the agents' run start (their bins' origin) falls on the experiment's
        clock: the median over the agents that reported."""
        known = [o - self.started for o in self._origin if o is not None]
        return statistics.median(known) if known else 0.0

    def _timeline_figures(self, phases: list[PhaseFigures]) -> None:
        """Unavailability and the times to recover, from the timeline's points. Before the
        run's first successful action the load is starting, not the store failing: those
        intervals are not unavailable time."""
        starts = [p.start_s for p in phases[1:]]
        rows: list[list[_Point]] = [[] for _ in phases]
        for point in self._points:
            rows[bisect.bisect_right(starts, point.end - point.span / 2)].append(point)
        baseline = phases[0].actions_per_s
        served = next((p.end for p in self._points if p.throughput > 0), math.inf)
        lost = [p for p in self._points if p.throughput == 0 and p.end > served]
        for phase, points in zip(phases, rows, strict=True):
            phase.unavailable_s = _time_within(lost, phase.start_s, phase.end_s)
            if phase.index == 0:
                continue
            phase.recover_throughput_s = _recovery(
                phase.start_s, points, lambda p: p.throughput >= RECOVERED_SHARE * baseline
            )
            phase.recover_sla_s = _recovery(
                phase.start_s,
                points,
                lambda p: p.errors == 0 and p.within is not None and p.within >= self.sla.alpha,
            )


def _time_within(points: list[_Point], start_s: float, end_s: float) -> float:
    """The time of `points` inside [start_s, end_s]: a phase's share of an interval that
    straddles its edges, nothing of intervals past the run's end (calls stuck in a dead
    store report on after it), never more than the phase lasts."""
    inside = sum(max(0.0, min(p.end, end_s) - max(p.begin, start_s)) for p in points)
    return min(inside, max(0.0, end_s - start_s))


def _coarser(points: list[_Point]) -> list[_Point]:
    """At most MAX_POINTS points for the record: consecutive ones merged (rates averaged
    over their time, the worst p95 and share within beta kept) when a run is longer."""
    group = math.ceil(len(points) / MAX_POINTS)
    if group <= 1:
        return points
    out = []
    for i in range(0, len(points), group):
        part = points[i : i + group]
        span = sum(p.span for p in part)
        p95 = [p.p95_ms for p in part if p.p95_ms is not None]
        within = [p.within for p in part if p.within is not None]
        out.append(
            _Point(
                end=part[-1].end,
                span=span,
                throughput=sum(p.throughput * p.span for p in part) / span,
                errors_per_s=sum(p.errors_per_s * p.span for p in part) / span,
                p95_ms=max(p95) if p95 else None,
                within=min(within) if within else None,
                errors=sum(p.errors for p in part),
            )
        )
    return out


def _recovery(
    start_s: float, points: list[_Point], holds: Callable[[_Point], bool]
) -> float | None:
    """Seconds from the phase's start to the first of RECOVERY_HOLD points in a row that
    hold (None: none within the phase)."""
    run = 0
    for i, point in enumerate(points):
        run = run + 1 if holds(point) else 0
        if run == RECOVERY_HOLD:
            first = points[i - RECOVERY_HOLD + 1]
            return round(max(0.0, first.begin - start_s), 3)
    return None


def _add_reads(figures: ScenarioFigures, replies: list[pb.ValidateReply]) -> None:
    """Reads, unpredictable reads and their lag per phase, and the reads per bin, over
    the agents' validations."""
    phases = figures.phases
    lags = [new_histogram() for _ in phases]
    reads: list[int] = []
    unpredictable: list[int] = []
    for reply in replies:
        for i, part in enumerate(reply.phases[: len(phases)]):
            phases[i].reads += part.reads
            phases[i].unpredictable += part.unpredictable
            if part.lag_hist:
                lags[i].add(decode(part.lag_hist))
        for series, values in (
            (reads, reply.series_reads),
            (unpredictable, reply.series_unpredictable),
        ):
            for b, count in enumerate(values[:MAX_BINS]):
                if b == len(series):
                    series.append(0)
                series[b] += count
    for phase, lag in zip(phases, lags, strict=True):
        if phase.reads:
            phase.unpredictable_percent = 100.0 * phase.unpredictable / phase.reads
        summary = LatencySummary.of(lag)
        phase.lag_p50_ms, phase.lag_p95_ms, phase.lag_max_ms = (
            summary.p50_ms,
            summary.p95_ms,
            summary.max_ms,
        )
    figures.timeline.reads, figures.timeline.unpredictable = reads, unpredictable
