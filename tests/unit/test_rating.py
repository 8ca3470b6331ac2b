"""Ratings on the model store: the search finds the formula's peak, records everything,
and a resumed rating runs nothing twice."""

import json
import math

import pyarrow.parquet as pq
import pytest

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.model_store import ModelStore
from bgbench.coordinator.rating.ratings import Rating
from bgbench.coordinator.storage.results import ResultsStore

PEAKS = [500, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8]


def settings(tmp_path, *overrides: str):
    pairs = [parse_override(o) for o in ("store.name=model", f"results_dir={tmp_path}", *overrides)]
    return load_settings(None, pairs)


def rate(s, rating_id="R1", run=None):
    db = ResultsStore(s.results_dir)
    if rating_id not in {r["id"] for r in db.ratings()}:
        db.start_rating(rating_id, s.rating.objective, "model", s.model_dump_json())
    model = ModelStore(s.model, s.sla)
    rating = Rating(rating_id, s, run or model.experiment, db)
    return rating.execute(1 << 30), db


@pytest.mark.parametrize("peak", PEAKS)
def test_soar_is_the_quadratic_peak(tmp_path, peak):
    s = settings(tmp_path, "rating.objective=soar", f"model.peak={peak}")
    summary, db = rate(s)
    assert summary.soar == pytest.approx(peak, rel=0.01)
    assert abs(summary.soar_threads - math.sqrt(peak)) <= 1
    runs = len(db.experiments("R1"))
    assert runs == summary.experiments_unique + summary.experiments_repeated
    assert summary.experiments_requested >= summary.experiments_unique
    assert summary.experiments_unique <= 30  # the paper: about 40 unique for 10^8
    assert summary.final_soar.note.endswith("passed")


def test_socialites_is_where_latency_breaks_the_sla(tmp_path):
    # quadratic with no spread: mean latency T / X(T) = 1 / (a - T) s exceeds beta at T > a - 10
    s = settings(tmp_path, "rating.objective=socialites", "model.peak=1.1e6", "model.spread=0")
    summary, _ = rate(s)
    alpha = 2 * math.sqrt(1.1e6)  # 2097.6: the bound falls between two thread counts
    assert summary.socialites == math.floor(alpha - 10)


@pytest.mark.slow
def test_square_root_store_is_rated_at_its_sla_limit(tmp_path):
    s = settings(tmp_path, "model.curve=sqrt", "model.rate_at_one=1000", "model.spread=0.3")
    summary, _ = rate(s)
    model = ModelStore(s.model, s.sla)
    passing = [t for t in range(1, 20000) if model.experiment(t, 1, "x").passed]
    assert summary.socialites == max(passing)
    assert summary.soar_threads == max(passing)  # throughput rises until the SLA fails
    assert summary.soar == pytest.approx(1000 * math.sqrt(max(passing)))


def test_staleness_rising_with_t_fails_the_sla(tmp_path):
    s = settings(tmp_path, "model.unpredictable_per_thread=0.001", "sla.tau=0.1")
    summary, db = rate(s)
    assert summary.socialites == 100  # 0.001% per thread: T > 100 exceeds 0.1%
    assert any("staleness" in e["reasons"] for e in db.experiments("R1"))


def test_final_at_a_longer_duration_is_a_separate_experiment(tmp_path):
    s = settings(tmp_path, "sla.delta_s=60", "sla.delta_search_s=5", "rating.objective=soar")
    summary, db = rate(s)
    phases = [(e["phase"], e["duration_s"]) for e in db.experiments("R1")]
    assert ("final", 60.0) in phases and ("search", 5.0) in phases
    assert summary.search_duration_s == 5 and summary.final_duration_s == 60


@pytest.mark.slow
def test_a_resumed_rating_runs_nothing_twice(tmp_path):
    s = settings(tmp_path, "model.peak=1e5")
    model = ModelStore(s.model, s.sla)
    ran: list[int] = []

    def dies_after_five(threads, duration, exp_id, rate=None):
        if len(ran) == 5:
            raise KeyboardInterrupt  # the coordinator is killed mid-search
        ran.append(threads)
        return model.experiment(threads, duration, exp_id, rate)

    with pytest.raises(KeyboardInterrupt):
        rate(s, "R9", dies_after_five)
    db = ResultsStore(tmp_path)
    assert [e["threads"] for e in db.experiments("R9")] == ran == [1, 2, 4, 8, 16]

    resumed_runs: list[int] = []

    def counting(threads, duration, exp_id, rate=None):
        resumed_runs.append(threads)
        return model.experiment(threads, duration, exp_id, rate)

    summary, db = rate(s, "R9", counting)
    assert not set(resumed_runs) & set(ran)  # nothing finished before was run again
    recorded = [json.loads(e["result_json"])["experiment_id"] for e in db.experiments("R9")]
    assert len(recorded) == len(set(recorded))  # every run its own experiment
    assert summary.experiments_run_now == len(resumed_runs)
    assert summary.experiments_unique + summary.experiments_repeated == len(recorded)
    fresh, _ = rate(settings(tmp_path / "fresh", "model.peak=1e5"), "R10")
    assert (summary.soar, summary.socialites) == (fresh.soar, fresh.socialites)
    assert any("resumed" in n for n in summary.notes)


@pytest.mark.slow
def test_a_warm_up_runs_first_unrated_and_again_on_resume(tmp_path):
    s = settings(tmp_path, "model.peak=1e4", "rating.warmup_s=7", "rating.warmup_threads=8")
    model = ModelStore(s.model, s.sla)
    calls: list[tuple[int, float]] = []

    def recording(threads, duration, exp_id, rate=None):
        calls.append((threads, duration))
        return model.experiment(threads, duration, exp_id, rate)

    summary, db = rate(s, "W1", recording)
    assert calls[0] == (8, 7.0)
    phases = [(e["phase"], e["threads"]) for e in db.experiments("W1")]
    assert phases[0] == ("warmup", 8)
    assert ("search", 8) in phases  # T=8 is still measured: the warm-up is no outcome
    assert any("warmed up at T=8 for 7 s" in n for n in summary.notes)
    cold, _ = rate(settings(tmp_path / "cold", "model.peak=1e4"), "W2")
    assert (summary.soar, summary.socialites) == (cold.soar, cold.socialites)

    calls.clear()
    db.finish_rating("W1", "failed", None, None, None, None, "killed")
    rate(s, "W1", recording)  # resumed: every rated experiment replays, the warm-up reruns
    assert calls == [(8, 7.0)]


def test_results_export(tmp_path):
    s = settings(tmp_path, "model.peak=1e4")
    _, db = rate(s)
    n = db.export("R1", "csv", tmp_path / "r.csv")
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert len(lines) == n + 1 and lines[0].startswith("rating_id,seq,phase,threads")
    db.export("R1", "json", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["experiments"]) == n and data["config"]["store"]["name"] == "model"
    db.export("R1", "parquet", tmp_path / "r.parquet")
    assert pq.read_table(tmp_path / "r.parquet").num_rows == n
