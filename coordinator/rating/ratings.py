"""A rating: search at the short duration, then the final experiment at the full one;
or, for the `sweep` objective, a fixed list of thread counts each run several times.

The strategies are pure; this module feeds them experiments through memos keyed
by duration (a final at Delta is a different experiment from a search run at
Delta_s, and the same one when the two are equal), records every experiment as
it finishes, and replays recorded ones on resume. A sweep runs through one memo per
repeat, so a resume replays each recorded repeat the same way.
"""

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from bgbench.coordinator.configuration.config import Settings, final_duration, search_duration
from bgbench.coordinator.rating.bottleneck_of import bottleneck_of
from bgbench.coordinator.records.faults import experiment_fault
from bgbench.coordinator.records.stats import compare
from bgbench.coordinator.records.sweep import (
    PHASE,
    Plan,
    Sample,
    SweepTable,
    recorded,
    sample_of,
    tabulate,
)
from bgbench.coordinator.search.exhaustive import exhaustive
from bgbench.coordinator.search.final import FinalResult, final
from bgbench.coordinator.search.fit import soar_fit
from bgbench.coordinator.search.memo import Memo, Outcome
from bgbench.coordinator.search.rate import max_rate
from bgbench.coordinator.search.soar import soar
from bgbench.coordinator.search.socialites import socialites
from bgbench.coordinator.storage.evidence import RunFigures, outcome_of, reasons_of
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import UserError
from bgbench.resources.model import Bottleneck
from bgbench.run_result import ExperimentResult, TransactionFigures

# (threads, duration, experiment id, open-loop rate or None) -> the experiment's result
RunFn = Callable[[int, float, str, float | None], ExperimentResult]
MAX_RESEARCHES = 2  # times Delta_s is lengthened when the final disagrees with the search


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


@dataclass
class FinalSummary:
    chosen: int  # T the search chose
    threads: int  # T that passed for the full duration (0: none)
    throughput: float
    backed_off: bool
    tried: list[int]
    note: str
    low: float | None = None  # the throughput's confidence interval (None: unbounded)
    high: float | None = None
    runs: int = 1  # experiments pooled at the chosen T


@dataclass
class RatingSummary:
    rating_id: str
    objective: str
    store: str
    search_duration_s: float
    final_duration_s: float
    soar: float | None = None  # actions/s of the final experiment at soar_threads
    soar_threads: int | None = None
    socialites: int | None = None
    search_soar: float | None = None  # best throughput seen while searching
    search_soar_threads: int | None = None
    search_socialites: int | None = None
    final_soar: FinalSummary | None = None
    final_socialites: FinalSummary | None = None
    experiments_requested: int = 0
    experiments_unique: int = 0
    experiments_run_now: int = 0  # this session; the rest were replayed from the record
    notes: list[str] = field(default_factory=list)
    sweep: SweepTable | None = None  # the sweep objective's table
    confidence: float | None = None  # of the intervals below (None: the classic search)
    soar_low: float | None = None  # SoAR's confidence interval
    soar_high: float | None = None
    # Socialites lies in [low, high]: the highest T that passed clearly, and one below the
    # lowest T above it that failed clearly; the T between had uncertain verdicts.
    socialites_low: int | None = None
    socialites_high: int | None = None
    uncertain_threads: list[int] = field(default_factory=list)  # verdicts left uncertain
    # Runs beyond the first of an experiment: for a clear verdict, and a final's extra runs.
    experiments_repeated: int = 0
    over: str = "threads"  # what was searched: threads, or the open-loop rate
    soar_rate: float | None = None  # rate search: the highest rate that met the SLA
    threads_fixed: int | None = None  # rate search: the socialites every rate ran with
    # What bound the final experiment (coordinator/rating/bottleneck_of.py); None: nothing
    # measured (the model store, a record older than resources)
    bottleneck: Bottleneck | None = None
    # The final experiment's transactions per interaction (run_result/transactions.py);
    # empty when no action ran one
    transactions: dict[str, TransactionFigures] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RatingSummary":
        """A summary as to_dict wrote it (recorded with a finished rating)."""
        finals = {
            k: FinalSummary(**data[k]) if data.get(k) else None
            for k in ("final_soar", "final_socialites")
        }
        sweep = SweepTable.from_dict(data["sweep"]) if data.get("sweep") else None
        found = data.get("bottleneck")
        bottleneck = bottleneck_of(found) if isinstance(found, dict) else None
        transactions = {
            name: TransactionFigures(**figures)
            for name, figures in (data.get("transactions") or {}).items()
        }
        known = {**finals, "sweep": sweep, "bottleneck": bottleneck, "transactions": transactions}
        return cls(**{**data, **known})


class Rating:
    def __init__(
        self,
        rating_id: str,
        settings: Settings,
        run: RunFn,
        store: ResultsStore,
        on_result: Callable[[str, ExperimentResult], None] | None = None,
        on_start: Callable[[str, int, float, str], None] | None = None,
    ) -> None:
        self.rating_id = rating_id
        self.settings = settings
        self.run = run
        self.store = store
        self.on_result = on_result
        self.on_start = on_start  # (phase, threads, duration, experiment id) before each run
        self.memos: dict[tuple[bool, str, float], Memo] = {}
        self._prior = store.known_runs(rating_id)
        self.replayed = sum(len(runs) for by_t in self._prior.values() for runs in by_t.values())
        self.floor = 1
        self.repeated = 0
        self.ran_now = 0  # experiments (runs) this session
        self.classic = settings.rating.search == "classic"

    def _outcome(self, runs: list[RunFigures]) -> Outcome:
        s = self.settings
        if self.classic:  # one number per T, as the paper
            r = runs[-1]
            return Outcome(r.passed, r.throughput, r.reasons)
        return outcome_of(runs, s.sla, s.rating)

    def _settled(self, runs: list[RunFigures], phase: str) -> bool:
        """Whether these runs decide their experiment (no further repeat is due). A final
        runs rating.final_runs times: SoAR's interval needs the runs' spread."""
        if not runs:
            return False
        if self.classic:
            return True
        r = self.settings.rating
        if phase == "final" and len(runs) < r.final_runs:
            return False
        return len(runs) >= max(r.repeats, r.final_runs if phase == "final" else 1) or (
            self._outcome(runs).clear
        )

    def _memo(self, duration: float, phase: str, rate_of: Callable[[int], float | None]) -> Memo:
        """The memo of experiments at `duration`; its key is T, or the rate when the rating
        searches rates (rate_of maps the key to the open-loop rate, None: closed loop)."""
        # The classic search's final at Delta = Delta_s is its search's experiment; else a
        # final is run afresh, so its interval is not biased by the search's choice.
        group = "search" if self.classic else phase
        key = (rate_of(1) is not None, group, duration)
        if key in self.memos:
            return self.memos[key]
        prior: dict[int, list[RunFigures]] = {}
        for (recorded_phase, d), by_key in self._prior.items():
            if d == duration and (self.classic or recorded_phase == phase):
                for k, runs in by_key.items():
                    prior.setdefault(k, []).extend(runs)
        threads_fixed = self._threads_fixed()

        def experiment(k: int) -> Outcome:
            rate = rate_of(k)
            threads = k if rate is None else threads_fixed
            runs = list(prior.get(k, []))
            while not self._settled(runs, phase):
                what = f"T{threads}" if rate is None else f"T{threads}-R{k}"
                again = f"-r{len(runs) + 1}" if runs else ""
                tag = "-final" if phase == "final" and not self.classic else ""
                exp_id = f"{self.rating_id}-{what}-{duration:g}s{tag}{again}"
                self.repeated += 1 if runs else 0
                self.ran_now += 1
                result = self._record(phase, self._run(phase, threads, duration, exp_id, rate))
                runs.append(RunFigures.of(result))
            return self._outcome(runs)

        known = {k: self._outcome(runs) for k, runs in prior.items() if self._settled(runs, phase)}
        memo = Memo(experiment, known=known, floor=self.floor if rate_of(1) is None else 1)
        self.memos[key] = memo
        return memo

    def _threads_fixed(self) -> int:
        return max(self.settings.run.threadcount, self.floor)

    def _run(
        self, phase: str, threads: int, duration: float, exp_id: str, rate: float | None
    ) -> ExperimentResult:
        if self.on_start:
            self.on_start(phase, threads, duration, exp_id)
        return self.run(threads, duration, exp_id, rate)

    def _record(self, phase: str, result: ExperimentResult) -> ExperimentResult:
        self.store.add_experiment(self.rating_id, phase, result)
        if self.on_result:
            self.on_result(phase, result)
        if result.fault:
            raise experiment_fault(result.threads, result.fault, self.rating_id, self.store.shown)
        return result

    def _warm_up(self, threads: int, duration: float) -> str:
        """One unrated run before the search (again on resume: the store may be cold)."""
        exp_id = f"{self.rating_id}-warmup{self.replayed}-T{threads}"
        self._record("warmup", self._run("warmup", threads, duration, exp_id, None))
        return f"warmed up at T={threads} for {duration:g} s first (not rated)"

    def execute(self, t_max: int, t_min: int = 1) -> RatingSummary:
        """Search T in [t_min, t_max]; t_min is the number of fragments, so that every
        fragment has a thread in every experiment."""
        s = self.settings
        if s.rating.objective == "sweep":
            raise ValueError("a sweep searches nothing: run it with Rating.sweep")
        if t_min > t_max:
            raise UserError(
                f"invalid config: rating.max_threads: {t_max} threads cannot cover {t_min} "
                "fragments (one thread each at least); raise it or use fewer load processes"
            )
        self.floor = t_min
        ds, df = search_duration(s), final_duration(s)
        objective, t0 = s.rating.objective, max(min(s.rating.t0, t_max), t_min)
        summary = RatingSummary(self.rating_id, objective, s.store.name, ds, df)
        summary.confidence = None if self.classic else s.rating.confidence
        if t0 > s.rating.t0:
            summary.notes.append(
                f"the search starts at T={t0}, not rating.t0={s.rating.t0}: each of the "
                f"{t_min} fragments needs a thread, or the load would not follow the Zipfian"
            )
        if s.rating.warmup_s > 0:
            warm = max(min(s.rating.warmup_threads, t_max), t_min)
            summary.notes.append(self._warm_up(warm, s.rating.warmup_s))
        if s.rating.over == "rate":
            self._rate_search(summary, ds, df)
        else:
            for attempt in range(MAX_RESEARCHES + 1):
                self._search(summary, ds, df, t0, t_max)
                longer = self._disagreement(summary, ds, df)
                if longer is None or attempt == MAX_RESEARCHES:
                    break
                summary.notes.append(longer)
                ds = min(df, 2 * ds)
                summary.search_duration_s = ds
        summary.experiments_requested = sum(m.total for m in self.memos.values())
        summary.experiments_unique = sum(m.unique for m in self.memos.values())
        summary.experiments_run_now = self.ran_now
        summary.experiments_repeated = self.repeated
        if self.replayed:
            summary.notes.append(
                f"resumed: {self.replayed} finished experiments were replayed from the record"
            )
        return summary

    def _search(self, summary: RatingSummary, ds: float, df: float, t0: int, t_max: int) -> None:
        """One search at Delta_s and its finals at Delta, into the summary."""
        s, objective = self.settings, self.settings.rating.objective
        closed: Callable[[int], float | None] = lambda _: None  # noqa: E731
        search = self._memo(ds, "search", closed)
        best: tuple[int, Outcome] | None = None
        social: int | None = None
        if objective == "exhaustive":
            social, best = exhaustive(search, t0, t_max)
        if objective in ("both", "socialites"):
            social = socialites(search, t0, t_max)
        if objective in ("both", "soar"):
            if self.classic:
                best = soar(search, t0, t_max)
            else:
                best = soar_fit(search, t0, t_max, s.rating.confidence)
        summary.search_soar_threads = best[0] if best else None
        summary.search_soar = best[1].throughput if best else None
        summary.search_socialites = social
        summary.final_soar = summary.final_socialites = None
        summary.soar = summary.soar_threads = summary.socialites = None
        summary.soar_low = summary.soar_high = None
        summary.socialites_low = summary.socialites_high = None
        finals = self._memo(df, "final", closed)
        if objective in ("both", "soar", "exhaustive"):
            if best is None:
                summary.notes.append("no experiment met the SLA: SoAR is 0")
                summary.soar, summary.soar_threads = 0.0, 0
            else:
                f = self._final(finals, best[0])
                summary.final_soar = f
                summary.soar_threads, summary.soar = f.threads, f.throughput
                summary.soar_low, summary.soar_high = f.low, self._peak_high(search, f)
        if objective in ("both", "socialites", "exhaustive") and social is not None:
            if social == 0:
                summary.notes.append(
                    f"T={self.floor} (the fewest that can run) already fails the SLA: "
                    "Socialites is 0"
                )
                summary.socialites = 0
            else:
                f = self._final(finals, social)
                summary.final_socialites = f
                summary.socialites = f.threads
        self._uncertainty(summary, search, t_max)

    def _peak_high(self, search: Memo, f: FinalSummary) -> float | None:
        """The upper end of SoAR's interval. The final measures the chosen T, and the peak
        may lie at a T the search could not tell from it: the peak is at least the final's
        level, and at most the highest upper end of any passing experiment's interval."""
        if f.high is None or self.classic:
            return f.high
        # an interval on a handful of samples (a 1 s experiment) says too little to count
        highs = [o.high for o in search.known.values() if o.passed and len(o.samples) >= 8]
        top = max([f.high, *highs])
        return _finite(top)

    def _uncertainty(self, summary: RatingSummary, search: Memo, t_max: int) -> None:
        """Socialites' range from the verdicts the search left uncertain."""
        if self.classic:
            return
        unsure = sorted(t for t, o in search.known.items() if not o.clear)
        summary.uncertain_threads = unsure
        social = summary.search_socialites
        if social is None:
            return
        clear_pass = [t for t, o in search.known.items() if o.passed and o.clear and t <= social]
        clear_fail = [t for t, o in search.known.items() if not o.passed and o.clear and t > social]
        # no clear pass below: as low as the lowest T tried, not a T no verdict speaks of
        lowest = min(search.known, default=social)
        summary.socialites_low = max(clear_pass, default=lowest) if unsure else social
        summary.socialites_high = min(clear_fail, default=t_max + 1) - 1 if unsure else social
        if summary.socialites_low > social:  # a clear pass above an uncertain one
            summary.socialites_low = social

    def _disagreement(self, summary: RatingSummary, ds: float, df: float) -> str | None:
        """The paper's check of Delta_s: does the final at the chosen T agree with what the
        search measured there? A note on lengthening Delta_s when it does not."""
        f = summary.final_soar
        if self.classic or f is None or f.threads == 0 or ds >= df:
            return None
        searched = self.memos[(False, "search", ds)].known.get(f.threads)
        finished = self.memos[(False, "final", df)].known.get(f.threads)
        if searched is None or finished is None or not searched.samples:
            return None
        if compare(finished.samples, searched.samples, self.settings.rating.confidence) == 0:
            return None
        if searched.low <= finished.throughput <= searched.high:
            return None
        return (
            f"the final experiment at T={f.threads} measured {finished.throughput:,.0f} "
            f"actions/s, outside the search's {searched.low:,.0f}..{searched.high:,.0f} at "
            f"Delta_s={ds:g} s: Delta_s is too short for this store; searching again at "
            f"Delta_s={min(df, 2 * ds):g} s"
        )

    def _rate_search(self, summary: RatingSummary, ds: float, df: float) -> None:
        """The open-loop rating: the highest arrival rate whose experiment meets the SLA,
        at run.threadcount socialites; SoAR is the throughput served at that rate."""
        s = self.settings
        summary.over, summary.threads_fixed = "rate", self._threads_fixed()
        first = max(1, round(s.run.target_rate or 100))
        rate_of: Callable[[int], float | None] = float
        search = self._memo(ds, "search", rate_of)
        best = max_rate(search, first, s.rating.rate_resolution)
        if best is None:
            summary.notes.append(f"no rate met the SLA, down to {first} actions/s: SoAR is 0")
            summary.soar, summary.soar_rate = 0.0, 0.0
            return
        summary.search_soar = best[1].throughput
        f = self._final(self._memo(df, "final", rate_of), best[0])
        summary.final_soar = f
        summary.soar, summary.soar_rate = f.throughput, float(f.threads)
        summary.soar_threads = summary.threads_fixed
        summary.soar_low, summary.soar_high = f.low, f.high
        f.note = f.note.replace("T=", "rate ").replace("every T", "every rate")

    def sweep(self, plan: Plan, t_min: int = 1) -> RatingSummary:
        """Klein et al.'s measurement: each T of `plan` run rating.sweep_repeats times in a
        row, in the order listed, at the final duration Delta; nothing is searched (each
        experiment still records its SLA verdict). Repeat k has a memo of its own, seeded
        with the k-th recorded experiment at each T, so a resume runs only the rest."""
        s = self.settings
        duration, repeats = final_duration(s), s.rating.sweep_repeats
        summary = RatingSummary(self.rating_id, "sweep", s.store.name, duration, duration)
        summary.notes += plan.clipped
        if s.rating.warmup_s > 0:
            warm = max(min(s.rating.warmup_threads, max(plan.threads)), t_min)
            summary.notes.append(self._warm_up(warm, s.rating.warmup_s))
        done = recorded(self.store.experiments(self.rating_id), duration)
        samples: dict[tuple[int, int], Sample] = {}
        memos = [self._repeat(k, duration, done, samples, t_min) for k in range(repeats)]
        replayed = sum(m.unique for m in memos)
        for t in plan.threads:
            for memo in memos:
                memo(t)
        ran = {
            t: [samples[t, k] for k in range(repeats) if (t, k) in samples] for t in plan.threads
        }
        requested = s.rating.sweep_threads
        summary.sweep = tabulate(plan, requested, repeats, duration, ran)
        summary.experiments_requested = sum(m.total for m in memos)
        summary.experiments_unique = sum(m.unique for m in memos)
        summary.experiments_run_now = sum(len(m.ran) for m in memos)
        if replayed:
            summary.notes.append(
                f"resumed: {replayed} finished experiments were replayed from the record"
            )
        return summary

    def _repeat(
        self,
        k: int,
        duration: float,
        done: dict[int, list[Sample]],
        samples: dict[tuple[int, int], Sample],
        floor: int,
    ) -> Memo:
        """The memo of repeat k of every T (its figures land in `samples`)."""
        known: dict[int, Outcome] = {}
        for t, runs in done.items():
            if k < len(runs):
                samples[t, k] = runs[k]
                known[t] = Outcome(runs[k].passed, runs[k].actions_per_s)

        def experiment(threads: int) -> Outcome:
            exp_id = f"{self.rating_id}-T{threads}-r{k + 1}-{duration:g}s"
            result = self._record(PHASE, self._run(PHASE, threads, duration, exp_id, None))
            samples[threads, k] = sample_of(asdict(result))
            return Outcome(result.passed, result.actions_per_s, reasons_of(result))

        return Memo(experiment, known=known, floor=floor)

    @staticmethod
    def _final(memo: Memo, chosen: int) -> FinalSummary:
        r: FinalResult = final(memo, chosen)
        o = r.outcome
        return FinalSummary(
            chosen=chosen,
            threads=r.threads,
            throughput=o.throughput if o else 0.0,
            backed_off=r.backed_off,
            tried=r.tried,
            note=r.describe(chosen),
            low=_finite(o.low) if o else None,
            high=_finite(o.high) if o else None,
            runs=o.runs if o else 0,
        )
