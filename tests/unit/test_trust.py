"""Ratings you can trust: intervals that cover, steady-state cuts, repeats near the SLA's
edge, the fitted SoAR search and the open-loop rate search, on the model store and on
synthetic series."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.model_store import ModelStore
from bgbench.coordinator.execution.steady import Tick, analyse, mser_cut
from bgbench.coordinator.rating.ratings import Rating
from bgbench.coordinator.records.stats import compare, mean_interval, proportion_interval
from bgbench.coordinator.search.fit import soar_fit
from bgbench.coordinator.search.memo import Memo, Outcome
from bgbench.coordinator.storage.results import ResultsStore


def settings(tmp_path, *overrides: str):
    pairs = [parse_override(o) for o in ("store.name=model", f"results_dir={tmp_path}", *overrides)]
    return load_settings(None, pairs)


def rate(s, rating_id="R1"):
    db = ResultsStore(s.results_dir)
    db.start_rating(rating_id, s.rating.objective, "model", s.model_dump_json())
    model = ModelStore(s.model, s.sla, s.rating, s.run.seed)
    return Rating(rating_id, s, model.experiment, db).execute(1 << 30), db


def true_peak(peak: float) -> float:
    v = math.sqrt(peak)
    return max(peak * (2 * t / v - (t / v) ** 2) for t in (math.floor(v), math.ceil(v)))


# -- statistics ---------------------------------------------------------------------------


def test_a_mean_interval_covers_the_true_mean_at_its_confidence():
    rng = np.random.default_rng(7)
    covered = sum(mean_interval(rng.normal(50, 5, 40), 0.95).covers(50) for _ in range(400))
    assert 0.90 * 400 <= covered <= 0.99 * 400


def test_one_sample_gives_no_interval_and_equal_samples_a_point():
    assert math.isinf(mean_interval([3.0], 0.95).high)
    flat = mean_interval([7.0] * 12, 0.95)
    assert (flat.low, flat.mean, flat.high) == (7.0, 7.0, 7.0)


def test_wilson_interval_of_no_hits_shrinks_with_the_count():
    few, many = proportion_interval(0, 1000, 0.95), proportion_interval(0, 100_000, 0.95)
    assert few.low == pytest.approx(0.0, abs=1e-12) and many.low == pytest.approx(0.0, abs=1e-12)
    assert few.high > 0.1 > many.high  # 0 of 1,000 cannot show < 0.1%; 0 of 100,000 can


def test_welch_tells_a_real_difference_from_noise():
    rng = np.random.default_rng(3)
    a, b = rng.normal(100, 5, 40), rng.normal(100, 5, 40)
    assert compare(a, b, 0.95) == 0
    assert compare(a + 20, b, 0.95) == 1 and compare(a, b + 20, 0.95) == -1


# -- steady state ---------------------------------------------------------------------------


def ticks_of(rates: np.ndarray, step: float = 0.5, within: float = 100.0) -> list[Tick]:
    out, total = [], 0
    for i, r in enumerate(rates):
        n = int(r * step)
        total += n
        out.append(Tick((i + 1) * step, total, n, round(n * within / 100)))
    return out


def test_a_warm_up_is_cut_and_recorded():
    rng = np.random.default_rng(1)
    rates = np.r_[np.linspace(200, 1000, 8), np.full(52, 1000.0)] + rng.normal(0, 20, 60)
    s = analyse([ticks_of(rates)], 30.0, cut=True)
    assert s.stable and 2.0 <= s.warmup_s <= 15.0
    assert s.window_s == pytest.approx(30.0 - s.warmup_s)
    assert np.mean(s.window_throughput) == pytest.approx(1000, rel=0.02)
    assert s.run_actions_per_s < 0.95 * 1000  # the whole run, warm-up included, is lower


def test_a_steady_run_loses_nothing_and_a_drifting_one_is_unstable():
    rng = np.random.default_rng(2)
    steady = analyse([ticks_of(rng.normal(1000, 50, 60))], 30.0, cut=True)
    assert steady.stable and steady.cut == 0
    falling = analyse([ticks_of(np.linspace(1000, 300, 60) + rng.normal(0, 20, 60))], 30, True)
    assert not falling.stable
    assert mser_cut([1.0, 2.0]) == (0, True)  # too short to test


def test_intervals_after_the_end_are_not_in_the_series():
    ticks = [*ticks_of(np.full(10, 1000.0)), Tick(5.6, 5100, 100, 100)]  # the stop tail
    s = analyse([ticks], 5.0, cut=True)
    assert len(s.throughput) == 10


# -- the model store and the rating -----------------------------------------------------------


def test_a_ramping_model_store_is_rated_on_its_steady_part(tmp_path):
    s = settings(tmp_path, "model.peak=1e4", "model.ramp_s=5", "model.noise=0.05")
    model = ModelStore(s.model, s.sla, s.rating, 1)
    r = model.experiment(100, 20.0, "ramp")
    assert r.steady is not None and r.steady.stable
    assert 2.0 <= r.steady.warmup_s <= 10.0
    assert r.actions_per_s == pytest.approx(1e4, rel=0.03)
    assert r.steady.run_actions_per_s < r.actions_per_s


@pytest.mark.slow
def test_noisy_ratings_cover_the_true_peak_with_few_experiments(tmp_path):
    peak, covered, unique = 1e8, 0, []
    for seed in range(1, 21):
        s = settings(tmp_path / str(seed), "rating.objective=soar", f"model.peak={peak:g}",
                     "model.noise=0.1", f"run.seed={seed}")  # fmt: skip
        summary, _ = rate(s)
        assert summary.confidence == 0.95 and summary.soar_low is not None
        covered += summary.soar_low <= true_peak(peak) <= summary.soar_high
        unique.append(summary.experiments_unique)
    assert covered >= 18  # 95% stated: 19 expected of 20
    assert max(unique) <= 30


@pytest.mark.slow
def test_a_verdict_near_the_sla_edge_is_repeated_and_socialites_gets_a_range(tmp_path):
    s = settings(tmp_path, "model.peak=1e4", "model.noise=0.2", "rating.objective=socialites",
                 "sla.delta_s=4", "rating.repeats=3")  # fmt: skip
    summary, db = rate(s)
    assert summary.experiments_repeated > 0
    assert len(db.experiments("R1")) == summary.experiments_unique + summary.experiments_repeated
    assert summary.socialites_low is not None and summary.socialites_high is not None
    assert summary.socialites_low <= summary.search_socialites <= summary.socialites_high
    counts: dict[int, int] = {}
    for e in db.experiments("R1"):
        if e["phase"] == "search":
            counts[e["threads"]] = counts.get(e["threads"], 0) + 1
    assert max(counts.values()) <= 3


@pytest.mark.slow
def test_a_search_at_a_too_short_delta_s_is_redone_longer(tmp_path):
    # no steady-state cut: each 1 s search experiment is mostly warm-up, the final is not
    s = settings(tmp_path, "model.peak=1e4", "model.ramp_s=4", "model.noise=0.02",
                 "rating.steady_state=false", "rating.objective=soar",
                 "sla.delta_search_s=1", "sla.delta_s=16")  # fmt: skip
    summary, db = rate(s)
    assert any("Delta_s is too short" in n for n in summary.notes)
    assert summary.search_duration_s > 1
    assert {e["duration_s"] for e in db.experiments("R1") if e["phase"] == "search"} >= {1.0, 2.0}


@pytest.mark.slow
def test_the_open_loop_search_finds_the_highest_rate_within_the_sla(tmp_path):
    s = settings(tmp_path, "model.peak=1e4", "rating.over=rate", "run.target_rate=100",
                 "run.threadcount=8", "rating.rate_resolution=0.02")  # fmt: skip
    summary, _ = rate(s)
    model = ModelStore(s.model, s.sla, s.rating, 1)
    passing = [r for r in range(100, 2000, 5) if model.experiment(8, 20.0, f"x{r}", r).passed]
    assert summary.over == "rate" and summary.threads_fixed == 8
    assert summary.soar_rate == pytest.approx(max(passing), rel=0.03)
    assert summary.soar == pytest.approx(summary.soar_rate, rel=0.01)  # below capacity


@pytest.mark.slow
def test_rate_prints_and_records_the_interval(tmp_path):
    cmd = [sys.executable, "-m", "bgbench", "rate", "--store", "model", "-p", "model.peak=1e4",
           "-p", "model.noise=0.1", "--results", str(tmp_path)]  # fmt: skip
    as_json = json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True,
                                        check=True).stdout)  # fmt: skip
    assert as_json["soar_low"] < as_json["soar"] < as_json["soar_high"]
    assert as_json["confidence"] == 0.95 and as_json["socialites_low"] is not None
    printed = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "95% CI" in printed and "SoAR" in printed
    (row, _) = sorted(ResultsStore.existing(tmp_path).ratings(), key=lambda r: r["created"])
    recorded = json.loads(ResultsStore.existing(tmp_path).rating(row["id"])["summary_json"])
    assert recorded["soar_low"] is not None and recorded["soar_high"] is not None


# -- the fitted search on curves that are not parabolas -----------------------------------------


def usl(t: int) -> float:
    """Gunther's universal scalability law: contention 5%, coherency 0.1% (peak near 31)."""
    return 1000 * t / (1 + 0.05 * (t - 1) + 0.001 * t * (t - 1))


def test_the_fitted_search_finds_a_usl_peak():
    memo = Memo(lambda t: Outcome(True, usl(t)))
    _, best = soar_fit(memo, 1, 1 << 20)
    peak = max(usl(t) for t in range(1, 2000))
    assert best.throughput >= 0.99 * peak
    assert memo.unique <= 20


def test_the_fitted_search_climbs_to_the_sla_edge():
    # throughput rises all the way; the SLA fails above T=37
    memo = Memo(lambda t: Outcome(t <= 37, 100.0 * t))
    t, best = soar_fit(memo, 1, 1 << 20)
    assert t == 37 and best.throughput == 3700
