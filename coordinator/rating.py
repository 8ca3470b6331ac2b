"""A rating: search at the short duration, then the final experiment at the full one;
or, for the `sweep` objective, a fixed list of thread counts each run several times.

The strategies are pure; this module feeds them experiments through memos keyed
by duration (a final at Delta is a different experiment from a search run at
Delta_s, and the same one when the two are equal), records every experiment as
it finishes, and replays recorded ones on resume. A sweep runs through one memo per
repeat, so a resume replays each recorded repeat the same way.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from bgbench.coordinator.config import Settings, final_duration, search_duration
from bgbench.coordinator.experiment import ExperimentResult
from bgbench.coordinator.faults import experiment_fault
from bgbench.coordinator.results import ResultsStore, reasons_of
from bgbench.coordinator.search.exhaustive import exhaustive
from bgbench.coordinator.search.final import FinalResult, final
from bgbench.coordinator.search.memo import Memo, Outcome
from bgbench.coordinator.search.soar import soar
from bgbench.coordinator.search.socialites import socialites
from bgbench.coordinator.sweep import PHASE, Plan, Sample, SweepTable, recorded, sample_of, tabulate
from bgbench.errors import UserError

RunFn = Callable[[int, float, str], ExperimentResult]


@dataclass
class FinalSummary:
    chosen: int  # T the search chose
    threads: int  # T that passed for the full duration (0: none)
    throughput: float
    backed_off: bool
    tried: list[int]
    note: str


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
        return cls(**{**data, **finals, "sweep": sweep})


class Rating:
    def __init__(
        self,
        rating_id: str,
        settings: Settings,
        run: RunFn,
        store: ResultsStore,
        on_result: Callable[[str, ExperimentResult], None] | None = None,
    ) -> None:
        self.rating_id = rating_id
        self.settings = settings
        self.run = run
        self.store = store
        self.on_result = on_result
        self.memos: dict[float, Memo] = {}
        known = store.known_outcomes(rating_id)
        self.replayed = sum(len(v) for v in known.values())
        self._known = known
        self.floor = 1

    def _memo(self, duration: float, phase: str) -> Memo:
        if duration not in self.memos:

            def experiment(threads: int) -> Outcome:
                exp_id = f"{self.rating_id}-T{threads}-{duration:g}s"
                result = self._record(phase, self.run(threads, duration, exp_id))
                return Outcome(result.passed, result.actions_per_s, reasons_of(result))

            self.memos[duration] = Memo(
                experiment, known=dict(self._known.get(duration, {})), floor=self.floor
            )
        return self.memos[duration]

    def _record(self, phase: str, result: ExperimentResult) -> ExperimentResult:
        self.store.add_experiment(self.rating_id, phase, result)
        if self.on_result:
            self.on_result(phase, result)
        if result.fault:
            raise experiment_fault(
                result.threads, result.fault, self.rating_id, self.settings.results_dir
            )
        return result

    def _warm_up(self, threads: int, duration: float) -> str:
        """One unrated run before the search (again on resume: the store may be cold)."""
        exp_id = f"{self.rating_id}-warmup{self.replayed}-T{threads}"
        self._record("warmup", self.run(threads, duration, exp_id))
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
        if t0 > s.rating.t0:
            summary.notes.append(
                f"the search starts at T={t0}, not rating.t0={s.rating.t0}: each of the "
                f"{t_min} fragments needs a thread, or the load would not follow the Zipfian"
            )
        if s.rating.warmup_s > 0:
            warm = max(min(s.rating.warmup_threads, t_max), t_min)
            summary.notes.append(self._warm_up(warm, s.rating.warmup_s))
        search = self._memo(ds, "search")
        best: tuple[int, Outcome] | None = None
        social: int | None = None
        if objective == "exhaustive":
            social, best = exhaustive(search, t0, t_max)
        if objective in ("both", "socialites"):
            social = socialites(search, t0, t_max)
        if objective in ("both", "soar"):
            best = soar(search, t0, t_max)
        if best is not None:
            summary.search_soar_threads, summary.search_soar = best[0], best[1].throughput
        summary.search_socialites = social

        finals = self._memo(df, "final")
        if objective in ("both", "soar", "exhaustive"):
            if best is None:
                summary.notes.append("no experiment met the SLA: SoAR is 0")
                summary.soar, summary.soar_threads = 0.0, 0
            else:
                f = self._final(finals, best[0])
                summary.final_soar = f
                summary.soar_threads = f.threads
                summary.soar = f.throughput
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
        summary.experiments_requested = sum(m.total for m in self.memos.values())
        summary.experiments_unique = sum(m.unique for m in self.memos.values())
        summary.experiments_run_now = sum(len(m.ran) for m in self.memos.values())
        if self.replayed:
            summary.notes.append(
                f"resumed: {self.replayed} finished experiments were replayed from the record"
            )
        return summary

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
            result = self._record(PHASE, self.run(threads, duration, exp_id))
            samples[threads, k] = sample_of(asdict(result))
            return Outcome(result.passed, result.actions_per_s, reasons_of(result))

        return Memo(experiment, known=known, floor=floor)

    @staticmethod
    def _final(memo: Memo, chosen: int) -> FinalSummary:
        r: FinalResult = final(memo, chosen)
        return FinalSummary(
            chosen=chosen,
            threads=r.threads,
            throughput=r.outcome.throughput if r.outcome else 0.0,
            backed_off=r.backed_off,
            tried=r.tried,
            note=r.describe(chosen),
        )
