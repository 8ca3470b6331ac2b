"""bgbench compare's logic: the settings that differ (dotted paths) and, pair by pair,
whether two SoAR differ beyond their intervals; on real model-store ratings."""

import pandas as pd
import pytest

from bgbench import results
from bgbench.coordinator.reports.compare import (
    WITHIN_NOISE,
    compare,
    differing,
    flatten,
    judge,
    render,
)
from bgbench.errors import UserError
from tests.unit.report_ratings import model_rating


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Three ratings: peaks 10^4 (twice, the same seed) and 2x10^4."""
    where = tmp_path_factory.mktemp("compare")
    model_rating(where, "RA", "model.peak=1e4")
    model_rating(where, "RB", "model.peak=1e4")
    model_rating(where, "RC", "model.peak=2e4", "run.seed=7")
    return results.load(where)


def test_flatten_gives_dotted_paths_with_lists_as_leaves():
    assert flatten({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": {}}) == {
        "a.b": 1,
        "a.c.d": [1, 2],
        "e": {},
    }


def test_only_differing_settings_are_listed():
    table = differing({"x": {"a": {"b": 1, "c": 2}}, "y": {"a": {"b": 1, "c": 3, "d": 4}}})
    assert list(table["setting"]) == ["a.c", "a.d"]
    assert list(table["x"]) == [2, None] and list(table["y"]) == [3, 4]


@pytest.mark.slow
def test_ratings_whose_intervals_do_not_overlap_are_told_apart(store):
    c = compare(store, ["RA", "RC"])
    (pair,) = c.pairs.to_dict("records")
    ra, rc = store.rating("RA"), store.rating("RC")
    assert rc["soar_low"] > ra["soar_high"]  # the premise: twice the peak, 5% noise
    assert pair["higher"] == "RC"
    assert pair["difference"] == pytest.approx(rc["soar"] - ra["soar"])
    assert pair["percent"] == pytest.approx(100 * (rc["soar"] - ra["soar"]) / ra["soar"])
    assert pair["verdict"].startswith("RC higher by ")
    assert set(c.settings["setting"]) == {"model.peak", "run.seed"}
    row = c.settings.set_index("setting").loc["model.peak"]
    assert (row["RA"], row["RC"]) == (1e4, 2e4)


@pytest.mark.slow
def test_identical_ratings_are_within_noise(store):
    c = compare(store, ["RA", "RB"])
    (pair,) = c.pairs.to_dict("records")
    assert pair["verdict"].startswith(WITHIN_NOISE) and pair["higher"] is None
    assert c.settings.empty  # the same settings: nothing differs


@pytest.mark.slow
def test_three_ratings_give_three_pairs_and_a_terminal_table(store):
    c = compare(store, ["RA", "RB", "RC"])
    assert [(p["a"], p["b"]) for p in c.pairs.to_dict("records")] == [
        ("RA", "RB"),
        ("RA", "RC"),
        ("RB", "RC"),
    ]
    from rich.console import Console

    console = Console(width=250, record=True)
    console.print(render(c))
    text = console.export_text()
    assert "model.peak" in text and WITHIN_NOISE in text and "RC higher by" in text


def test_a_missing_interval_is_named_not_judged_as_noise():
    a = pd.Series({"id": "A", "soar": 100.0, "soar_low": None, "soar_high": None})
    b = pd.Series({"id": "B", "soar": 90.0, "soar_low": 80.0, "soar_high": 120.0})
    v = judge(a, b)
    assert v.higher == "A" and "no interval to judge the noise" in v.label


@pytest.mark.parametrize("ids", [["RA"], ["RA", "RA"], ["RA", "R-none"]])
@pytest.mark.slow
def test_bad_ids_are_user_errors(store, ids):
    with pytest.raises(UserError):
        compare(store, ids)


@pytest.mark.slow
def test_ratings_without_socialites_compare_and_print(tmp_path):
    model_rating(tmp_path, "RS", "model.peak=1e4", "rating.objective=soar")
    model_rating(tmp_path, "RT", "model.peak=2e4", "rating.objective=soar")
    c = compare(results.load(tmp_path), ["RS", "RT"])
    assert c.ratings["socialites"].isna().all()
    from rich.console import Console

    console = Console(width=250, record=True)
    console.print(render(c))
    row = next(line for line in console.export_text().splitlines() if "Socialites" in line)
    assert [cell.strip() for cell in row.split("│")[2:4]] == ["-", "-"], row
