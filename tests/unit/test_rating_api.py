"""The rating as an API: settings and a results store in, a typed record out. A real
rating on the embedded SQLite store through a local agent, interrupted, then resumed
through the API with the store it was given, from another directory."""

from pathlib import Path

import pytest

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.rating import api
from bgbench.coordinator.records.events import Event, ExperimentResultReady
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import UserError


def tiny(tmp_path: Path, *extra: str):
    """One agent, one fragment of 400 members, a rating of a few one-second experiments.
    results_dir stays at its default: the API records where it is told, not there."""
    pairs = [
        "store.name=sqlite", f"store.options.path={tmp_path / 'bg.sqlite'}", "usercount=400",
        "agents.local=1", "agents.processes=1", "rating.objective=socialites",
        "rating.max_threads=4", "sla.delta_search_s=1", "sla.delta_s=1", "sla.beta_ms=1000",
        "rating.repeats=1",
        *extra,
    ]  # fmt: skip
    return load_settings(None, [parse_override(p) for p in pairs])


class InterruptAfter:
    """An event sink that is interrupted (as by Ctrl-C) once `n` experiments were shown."""

    def __init__(self, n: int) -> None:
        self.n = n

    def emit(self, event: Event) -> None:
        if isinstance(event, ExperimentResultReady) and event.phase in ("search", "final"):
            self.n -= 1
            if self.n == 0:
                raise KeyboardInterrupt


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> Path:
    """The current directory, away from the results store: nothing may land here."""
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    return here


@pytest.mark.slow
def test_a_rating_through_the_api_returns_its_record(tmp_path, elsewhere):
    store = ResultsStore(tmp_path / "store")
    record = api.rate(tiny(tmp_path), store)
    assert record.status == "done" and record.fault == "" and record.fault_kind == ""
    assert record.results == store.path and record.store == "sqlite"
    assert record.socialites == 4  # a second per experiment at most 4 threads: all pass
    assert record.summary is not None and record.summary.rating_id == record.rating_id
    assert [e.threads for e in record.experiments if e.phase == "search"] == [1, 2, 4]
    assert all(e.status == "passed" for e in record.experiments)
    (row,) = store.ratings()
    assert row["id"] == record.rating_id and row["status"] == "done"
    assert list(elsewhere.iterdir()) == []  # not the default results/ of the cwd
    assert (tmp_path / "store" / record.rating_id).is_dir()  # the agents' work went there
    assert api.rating_record(tmp_path / "store", record.rating_id) == record


@pytest.mark.slow
def test_an_interrupted_rating_resumes_through_the_api(tmp_path, elsewhere):
    store = ResultsStore(tmp_path / "store")
    with pytest.raises(KeyboardInterrupt):
        api.rate(tiny(tmp_path), store, events=InterruptAfter(2))
    (row,) = store.ratings()
    assert row["status"] == "failed" and row["message"] == "interrupted"
    assert len(store.experiments(row["id"])) == 2

    record = api.rate(None, store, resume=row["id"])  # its recorded settings
    assert record.status == "done" and record.rating_id == row["id"]
    assert record.socialites == 4
    threads = [(e.phase, e.threads) for e in record.experiments]
    assert threads[:2] == [("search", 1), ("search", 2)]  # replayed, not run again
    search = [t for t in threads if t[0] == "search"]
    assert len(search) == len(set(search))  # rating.repeats=1: each T searched once
    finals = [t for t in threads if t[0] == "final"]
    assert finals == [("final", 4)] * record.summary.final_socialites.runs
    assert record.summary is not None
    assert any("resumed: 2" in note for note in record.summary.notes)
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(UserError, match="finished"):
        api.rate(None, store, resume=row["id"])


def test_a_new_rating_needs_settings_and_a_resume_a_known_rating(tmp_path):
    with pytest.raises(UserError, match="settings"):
        api.rate(None, tmp_path)
    ResultsStore(tmp_path)
    with pytest.raises(UserError, match="no rating 'R-nope'"):
        api.rate(None, tmp_path, resume="R-nope")
    with pytest.raises(UserError, match="no results store"):
        api.rate(None, tmp_path / "missing", resume="R-nope")
    assert not (tmp_path / "missing").exists()


def test_a_model_rating_records_its_figures(tmp_path):
    settings = tiny(
        tmp_path, "store.name=model", "model.peak=1e4", "rating.objective=soar",
        "rating.max_threads=1000",
    )  # fmt: skip
    record = api.rate(settings, tmp_path)
    assert record.status == "done" and record.soar == pytest.approx(1e4, rel=0.01)
    assert record.summary is not None and record.summary.final_soar is not None
    assert record.soar_threads is not None and abs(record.soar_threads - 100) <= 1
    assert record.experiments and all(e.status != "fault" for e in record.experiments)
