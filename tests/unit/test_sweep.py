"""The thread sweep's pure parts (clipping with reasons, averaging the repeats, the table
as recorded and exported) and the sweep of a rating on the model store: every experiment
recorded as phase "sweep", a resume replaying what was recorded, a fault ending it."""

import csv
import json
from dataclasses import asdict, replace

import pytest

from bgbench.coordinator.configuration.config import SWEEP_THREADS, load_settings, parse_override
from bgbench.coordinator.execution.experiment import faulted
from bgbench.coordinator.execution.model_store import ModelStore
from bgbench.coordinator.rating import api
from bgbench.coordinator.rating.ratings import Rating, RatingSummary
from bgbench.coordinator.records.metrics import LatencySummary
from bgbench.coordinator.records.sweep import (
    ALL_ACTIONS,
    Limits,
    Plan,
    SweepTable,
    clip,
    recorded,
    row_of,
    sample_of,
    tabulate,
    write_csv,
)
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import SystemFault, UserError
from bgbench.run_result import ActionFigures, ExperimentResult


def latency(count: int, mean_ms: float, p95_ms: float) -> LatencySummary:
    return LatencySummary(count, mean_ms, p95_ms, p95_ms, p95_ms, mean_ms)


def result(
    threads: int,
    rate: float,
    actions: dict[str, tuple[int, float, float]],
    reads: int = 0,
    unpredictable: int = 0,
    passed: bool = True,
) -> ExperimentResult:
    """An experiment's result as the coordinator builds it: (count, mean ms, p95 ms) per
    action; the overall latency is the count-weighted mean and the largest p95."""
    per_action = [
        ActionFigures(name, c, 0, latency(c, m, p), latency(c, m, p), 100.0)
        for name, (c, m, p) in actions.items()
    ]
    total = sum(c for c, _, _ in actions.values())
    mean = sum(c * m for c, m, _ in actions.values()) / total if total else 0.0
    p95 = max((p for _, _, p in actions.values()), default=0.0)
    return ExperimentResult(
        experiment_id=f"E-T{threads}", threads=threads, duration_s=1.0, elapsed_s=1.0,
        store="test", actions=total, sessions=total, errors=0, actions_per_s=rate,
        sessions_per_s=rate, within_percent=100.0,
        unpredictable_percent=100.0 * unpredictable / reads if reads else 0.0, reads=reads,
        unpredictable_reads=unpredictable, per_action=per_action,
        overall=latency(total, mean, p95), agents=[], passed=passed,
    )  # fmt: skip


def sample(*args, **kwargs):
    return sample_of(asdict(result(*args, **kwargs)))


# -- clipping --------------------------------------------------------------------------


def test_values_that_cannot_run_are_clipped_each_with_its_reason():
    limits = Limits(floor=2, fit=400, setting=None, scale="bg.database.usercount")
    plan = clip(list(SWEEP_THREADS), limits)
    assert plan.threads == [2, 5, 10, 25, 50, 100, 200]
    assert len(plan.clipped) == 3  # 1, 500 and 1000: one line each
    low, high, higher = plan.clipped
    assert low.startswith("sweep: T=1 not run") and "2 fragments" in low
    assert "--processes" in low  # what lets it run
    assert high.startswith("sweep: T=500 not run") and "at most 400 threads fit" in high
    assert "raise bg.database.usercount" in high
    assert higher.startswith("sweep: T=1000 not run")
    assert all("\n" not in line for line in plan.clipped)


def test_max_threads_clips_below_what_fits_and_the_list_order_is_kept():
    plan = clip([50, 5, 100, 20], Limits(floor=1, fit=400, setting=60, scale="x.n"))
    assert plan.threads == [50, 5, 20]
    assert plan.clipped == ["sweep: T=100 not run: above rating.max_threads=60"]
    # What does not fit the database is named as such even when max_threads is lower too.
    plan = clip([1, 500], Limits(floor=1, fit=400, setting=60, scale="x.n"))
    assert "at most 400 threads fit" in plan.clipped[0]


def test_the_model_store_fits_any_thread_count():
    plan = clip([1, 100_000], Limits(floor=1, fit=None, setting=None, scale="x.n"))
    assert plan.threads == [1, 100_000] and plan.clipped == []


def test_a_sweep_with_nothing_left_to_run_is_bad_input():
    with pytest.raises(UserError, match=r"rating\.sweep_threads: none of \[500, 1000\].*2 to 400"):
        clip([500, 1000], Limits(floor=2, fit=400, setting=None, scale="x.n"))


# -- the settings -----------------------------------------------------------------------


def settings_of(*overrides: str):
    return load_settings(None, [parse_override(o) for o in overrides])


def test_sweep_settings_default_to_klein_and_refuse_bad_lists():
    s = settings_of("rating.objective=sweep")
    assert s.rating.sweep_threads == [1, 2, 5, 10, 25, 50, 100, 200, 500, 1000]
    assert s.rating.sweep_repeats == 3
    assert settings_of("rating.sweep_threads=1,2,4").rating.sweep_threads == [1, 2, 4]
    assert settings_of("rating.sweep_threads=[8,4]").rating.sweep_threads == [8, 4]
    for bad, named in [
        ("rating.sweep_threads=[2,2]", "T=2 is listed twice"),
        ("rating.sweep_threads=[]", "rating.sweep_threads"),
        ("rating.sweep_threads=[0]", "rating.sweep_threads.0"),
        ("rating.sweep_threads=a,b", "as a list"),
        ("rating.sweep_repeats=0", "rating.sweep_repeats"),
    ]:
        with pytest.raises(UserError, match=named) as info:
            settings_of(bad)
        assert "\n" not in str(info.value)


# -- averaging --------------------------------------------------------------------------


def test_repeats_are_averaged_p95_included_and_unpredictable_reads_pooled():
    runs = [
        sample(4, 100.0, {"R": (80, 1.0, 3.0), "W": (20, 2.0, 5.0)}, reads=100, unpredictable=1),
        sample(4, 200.0, {"R": (160, 2.0, 4.0), "W": (40, 4.0, 9.0)}, reads=900),
        sample(4, 300.0, {"R": (240, 3.0, 8.0), "W": (60, 6.0, 7.0)}, reads=0, passed=False),
    ]
    row = row_of(4, runs)
    assert row.threads == 4 and row.repeats == 3 and row.passed == 2
    assert row.actions_per_s == pytest.approx(200.0)
    assert (row.actions_per_s_min, row.actions_per_s_max) == (100.0, 300.0)
    assert row.actions_per_s_stdev == pytest.approx(100.0)  # the sample standard deviation
    # 1 of 1000 reads pooled, not the mean of the repeats' 1%, 0% and none.
    assert (row.reads, row.unpredictable_reads) == (1000, 1)
    assert row.unpredictable_percent == pytest.approx(0.1)
    by_name = {a.action: a for a in row.actions}
    assert [a.action for a in row.actions] == ["R", "W", ALL_ACTIONS]
    assert by_name["R"].mean_ms == pytest.approx(2.0)
    assert by_name["R"].p95_ms == pytest.approx(5.0)  # (3 + 4 + 8) / 3: the repeats' p95s
    assert by_name["W"].p95_ms == pytest.approx(7.0)
    assert by_name["W"].count == 120 and by_name["W"].runs == 3
    assert by_name[ALL_ACTIONS].p95_ms == pytest.approx((5.0 + 9.0 + 8.0) / 3)


def test_an_action_a_repeat_never_ran_is_averaged_over_those_it_ran_in():
    runs = [
        sample(2, 10.0, {"R": (10, 1.0, 2.0), "C": (0, 0.0, 0.0)}),
        sample(2, 10.0, {"R": (10, 1.0, 2.0), "C": (5, 6.0, 10.0)}),
        sample(2, 10.0, {"R": (10, 1.0, 2.0)}),
    ]
    c = next(a for a in row_of(2, runs).actions if a.action == "C")
    assert (c.runs, c.count, c.mean_ms, c.p95_ms) == (1, 5, 6.0, 10.0)


def test_one_repeat_has_no_spread():
    row = row_of(1, [sample(1, 50.0, {"R": (5, 1.0, 1.0)})])
    assert row.actions_per_s_stdev == 0.0 and row.actions_per_s_min == row.actions_per_s_max


def test_recorded_experiments_give_the_repeats_in_order_faults_left_out():
    def row(phase: str, r: ExperimentResult, status: str = "passed", duration: float = 1.0):
        return {
            "phase": phase, "status": status, "threads": r.threads, "duration_s": duration,
            "result_json": json.dumps(asdict(r)),
        }  # fmt: skip

    rows = [
        row("warmup", result(8, 1.0, {})),
        row("sweep", result(2, 10.0, {"R": (1, 1.0, 1.0)})),
        row("sweep", result(2, 0.0, {}), status="fault"),
        row("sweep", result(2, 30.0, {"R": (1, 1.0, 1.0)}, passed=False), status="failed"),
        row("sweep", result(4, 40.0, {"R": (1, 1.0, 1.0)})),
        row("sweep", result(4, 50.0, {"R": (1, 1.0, 1.0)}), duration=2.0),
    ]
    done = recorded(rows, 1.0)
    assert {t: [s.actions_per_s for s in v] for t, v in done.items()} == {
        2: [10.0, 30.0],
        4: [40.0],
    }
    assert not done[2][1].passed


def test_the_table_round_trips_through_the_summary_and_exports_as_csv(tmp_path):
    plan = Plan([1, 2], ["sweep: T=5 not run: above rating.max_threads=2"])
    samples = {
        1: [sample(1, 10.0, {"R": (10, 1.0, 2.0)}), sample(1, 12.0, {"R": (12, 1.0, 2.0)})],
        2: [sample(2, 20.0, {"R": (20, 1.0, 2.0), "W": (2, 3.0, 4.0)})] * 2,
    }
    table = tabulate(plan, [1, 2, 5], 2, 1.0, samples)
    assert [r.threads for r in table.rows] == [1, 2] and table.requested == [1, 2, 5]
    summary = RatingSummary("R1", "sweep", "sqlite", 1.0, 1.0, sweep=table)
    again = RatingSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert again == summary and isinstance(again.sweep, SweepTable)
    assert RatingSummary.from_dict({**summary.to_dict(), "sweep": None}).sweep is None

    n = write_csv(table, tmp_path / "sweep.csv")
    with open(tmp_path / "sweep.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert n == len(rows) == 2 + 3  # T=1: R, all; T=2: R, W, all
    assert [(r["threads"], r["action"]) for r in rows] == [
        ("1", "R"), ("1", ALL_ACTIONS), ("2", "R"), ("2", "W"), ("2", ALL_ACTIONS),
    ]  # fmt: skip
    assert float(rows[0]["actions_per_s"]) == pytest.approx(11.0)


# -- a sweep of a rating (model store) --------------------------------------------------


def model_settings(tmp_path, *extra: str):
    return settings_of(
        "store.name=model", f"results_dir={tmp_path}", "rating.objective=sweep",
        "rating.sweep_threads=[1,2,4]", "rating.sweep_repeats=2", "sla.delta_s=5",
        "sla.delta_search_s=1", *extra,
    )  # fmt: skip


class Counting:
    """The model store, each run's throughput raised by the number of runs before it (so
    repeats differ, and a figure tells which run it came from)."""

    def __init__(self, s, fail_at: int = 0, interrupt_at: int = 0) -> None:
        self.model = ModelStore(s.model, s.sla)
        self.calls: list[tuple[int, float, str]] = []
        self.fail_at, self.interrupt_at = fail_at, interrupt_at

    def __call__(
        self, threads: int, duration: float, exp_id: str, rate: float | None = None
    ) -> ExperimentResult:
        n = len(self.calls) + 1
        if n == self.interrupt_at:
            raise KeyboardInterrupt
        self.calls.append((threads, duration, exp_id))
        if n == self.fail_at:
            return faulted(exp_id, threads, duration, "model", [], "agent a:1 died", 0.0)
        r = self.model.experiment(threads, duration, exp_id)
        return replace(r, actions_per_s=r.actions_per_s + n)


def sweep(s, run, rating_id="S1", plan=None):
    db = ResultsStore(s.results_dir)
    if rating_id not in {r["id"] for r in db.ratings()}:
        db.start_rating(rating_id, "sweep", "model", s.model_dump_json())
    plan = plan or clip(s.rating.sweep_threads, Limits(1, None, None, "x.n"))
    return Rating(rating_id, s, run, db).sweep(plan), db


def test_a_sweep_runs_each_thread_count_repeatedly_at_delta_and_records_each(tmp_path):
    s = model_settings(tmp_path)
    run = Counting(s)
    summary, db = sweep(s, run)
    assert [(t, d) for t, d, _ in run.calls] == [(1, 5.0), (1, 5.0), (2, 5.0), (2, 5.0),
                                                (4, 5.0), (4, 5.0)]  # fmt: skip
    assert len({exp_id for _, _, exp_id in run.calls}) == 6
    rows = db.experiments("S1")
    assert [(e["phase"], e["threads"]) for e in rows] == [("sweep", t) for t in (1, 1, 2, 2, 4, 4)]
    table = summary.sweep
    assert table is not None and [r.threads for r in table.rows] == [1, 2, 4]
    rate = ModelStore(s.model, s.sla).throughput
    assert table.rows[0].actions_per_s == pytest.approx(rate(1) + 1.5)  # runs 1 and 2
    assert table.rows[2].actions_per_s_max == pytest.approx(rate(4) + 6)
    assert (summary.soar, summary.socialites) == (None, None)  # a sweep rates nothing
    assert summary.experiments_unique == summary.experiments_run_now == 6
    assert summary.search_duration_s == summary.final_duration_s == 5.0


def test_a_resumed_sweep_replays_what_was_recorded(tmp_path):
    s = model_settings(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        sweep(s, Counting(s, interrupt_at=4))
    db = ResultsStore(tmp_path)
    assert [e["threads"] for e in db.experiments("S1")] == [1, 1, 2]

    run = Counting(s)
    summary, db = sweep(s, run)
    assert [t for t, _, _ in run.calls] == [2, 4, 4]  # repeat 2 of T=2, then T=4
    assert [e["threads"] for e in db.experiments("S1")] == [1, 1, 2, 2, 4, 4]
    rate = ModelStore(s.model, s.sla).throughput
    table = summary.sweep
    assert table is not None
    # T=1 from the record (runs 1 and 2 of the first session), not run again.
    assert table.rows[0].actions_per_s == pytest.approx(rate(1) + 1.5)
    assert (table.rows[1].actions_per_s_min, table.rows[1].actions_per_s_max) == (
        pytest.approx(rate(2) + 1), pytest.approx(rate(2) + 3),
    )  # fmt: skip
    assert summary.experiments_run_now == 3 and summary.experiments_unique == 6
    assert any("resumed: 3" in n for n in summary.notes)


def test_a_fault_ends_the_sweep_recorded_and_its_experiment_runs_again_on_resume(tmp_path):
    s = model_settings(tmp_path)
    with pytest.raises(SystemFault, match=r"T=2 hit an infrastructure failure.*--resume S1"):
        sweep(s, Counting(s, fail_at=3))
    db = ResultsStore(tmp_path)
    assert [(e["threads"], e["status"]) for e in db.experiments("S1")] == [
        (1, "passed"), (1, "passed"), (2, "fault"),
    ]  # fmt: skip

    run = Counting(s)
    summary, db = sweep(s, run)
    assert [t for t, _, _ in run.calls] == [2, 2, 4, 4]  # the faulted one was no repeat
    swept = [e for e in db.experiments("S1") if e["status"] != "fault"]
    assert len(swept) == 6 and summary.experiments_run_now == 4
    assert summary.sweep is not None and summary.sweep.rows[1].repeats == 2


def test_the_api_sweeps_and_the_table_is_read_back(tmp_path):
    s = model_settings(tmp_path, "rating.max_threads=2", "rating.sweep_threads=[1,2,4]")
    record = api.rate(s, tmp_path)
    assert record.status == "done" and record.objective == "sweep"
    assert record.summary is not None and record.summary.sweep is not None
    assert [r.threads for r in record.summary.sweep.rows] == [1, 2]
    assert record.summary.notes[0] == "sweep: T=4 not run: above rating.max_threads=2"
    assert {e.phase for e in record.experiments} == {"sweep"} and len(record.experiments) == 4
    assert api.sweep_table(tmp_path, record.rating_id) == record.summary.sweep

    out = tmp_path / "export.json"
    ResultsStore(tmp_path).export(record.rating_id, "json", out)
    exported = json.loads(out.read_text())["summary"]["sweep"]
    assert SweepTable.from_dict(exported) == record.summary.sweep


def test_the_table_of_what_is_no_finished_sweep_is_refused_in_one_line(tmp_path):
    db = ResultsStore(tmp_path)
    s = model_settings(tmp_path)
    db.start_rating("S2", "sweep", "model", s.model_dump_json())
    with pytest.raises(UserError, match=r"no table yet \(running\).*--resume S2"):
        api.sweep_table(db, "S2")
    db.start_rating("B1", "both", "model", s.model_dump_json())
    with pytest.raises(UserError, match="not a sweep"):
        api.sweep_table(db, "B1")
