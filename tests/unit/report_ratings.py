"""Real short ratings recorded in a results store, for the tests of the loader, the
report and compare: on the model store (in-process, about a second) and on SQLite through
one local agent (a few seconds)."""

from pathlib import Path

from bgbench.coordinator.configuration.config import Settings, load_settings, parse_override
from bgbench.coordinator.execution.model_store import ModelStore
from bgbench.coordinator.rating import api
from bgbench.coordinator.rating.ratings import Rating, RatingSummary
from bgbench.coordinator.storage.results import ResultsStore


def model_settings(results: Path, *overrides: str) -> Settings:
    pairs = ("store.name=model", f"results_dir={results}", "model.noise=0.05", *overrides)
    return load_settings(None, [parse_override(o) for o in pairs])


def model_rating(results: Path, rating_id: str, *overrides: str) -> RatingSummary:
    """A finished model-store rating recorded as `rating_id` (with noise: intervals)."""
    s = model_settings(results, *overrides)
    db = ResultsStore(results)
    db.start_rating(rating_id, s.rating.objective, "model", s.model_dump_json())
    summary = Rating(rating_id, s, ModelStore(s.model, s.sla).experiment, db).execute(1 << 30)
    db.finish_rating(
        rating_id, "done", summary.soar, summary.soar_threads, summary.socialites,
        summary.to_dict(),
    )  # fmt: skip
    return summary


def sqlite_rating(results: Path, work: Path) -> api.RatingRecord:
    """A real rating of SQLite through one local agent: T up to 4, one-second runs."""
    pairs = [
        "store.name=sqlite", f"store.options.path={work / 'bg.sqlite'}", "usercount=400",
        "agents.local=1", "agents.processes=1", "rating.max_threads=4",
        "sla.delta_search_s=1", "sla.delta_s=1.5", "rating.final_runs=2",
    ]  # fmt: skip
    return api.rate(load_settings(None, [parse_override(p) for p in pairs]), results)
