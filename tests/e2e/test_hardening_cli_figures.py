"""Figures shown as they are (issue 24): an interval never leaves its quantity's range,
1 s search experiments give clear verdicts (not Socialites "uncertain between 0 and N"),
and sessions/s counts sessions only, on actions/s's time base, alike in every output."""

import json
from functools import partial
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests import helpers

bgbench = partial(helpers.bgbench, timeout=600)


class Tables(HTMLParser):
    """Every table of a report page as rows of cell texts (the header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def column(page: Path, name: str) -> list[float]:
    parser = Tables()
    parser.feed(page.read_text())
    values = []
    for table in parser.tables:
        header = table[0] if table else []
        if name in header:
            i = header.index(name)
            values += [float(row[i].replace(",", "")) for row in table[1:] if row[i]]
    return values


def test_a_noisy_ratings_intervals_stay_in_their_range(tmp_path):
    """A throughput interval of a few noisy batches reached below 0 actions/s."""
    results = tmp_path / "res"
    proc = bgbench(
        "rate", "--store", "model", "-p", "model.noise=1", "--delta-search", "2", "--delta",
        "4", "--max-threads", "128", "--results", str(results), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["soar_low"] >= 0, summary
    page = tmp_path / "report.html"
    shown = bgbench("report", summary["rating_id"], "--results", str(results), "-o", str(page))
    assert shown.returncode == 0, shown.stderr
    lows, highs = column(page, "CI low"), column(page, "CI high")
    assert lows and highs, "the report shows no throughput interval"
    assert min(lows) >= 0, lows
    assert all(low <= high for low, high in zip(lows, highs, strict=True))


def test_one_second_search_experiments_give_clear_verdicts(tmp_path):
    """Too short for an interval of the share within beta, each verdict was unclear, and
    Socialites was "uncertain between 0 and N"."""
    proc = bgbench(
        "rate", "--store", "sqlite", "--users", "400", "-p",
        f"store.options.path={tmp_path / 'bg.sqlite'}", "--delta-search", "1", "--delta", "2",
        "--max-threads", "4", "--results", str(tmp_path / "res"), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["socialites"] is not None, summary
    assert summary["uncertain_threads"] == [], summary
    assert summary["socialites_low"] == summary["socialites_high"] == summary["socialites"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[dict, Path]]:
    """A 4 s SQLite run of single actions and one of sessions: its JSON and its results
    directory."""
    out = {}
    for mix in ("verylow", "sessions"):
        tmp = tmp_path_factory.mktemp(mix)
        proc = bgbench(
            "run", "--store", "sqlite", "--users", "400", "--threads", "4", "--duration", "4",
            "--mix", mix, "--results", str(tmp), "-p", f"store.options.path={tmp / 'bg.sqlite'}",
            "--json",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        out[mix] = json.loads(proc.stdout), tmp
    return out


def test_single_actions_are_no_sessions(runs):
    result, _tmp = runs["verylow"]
    assert result["actions"] > 0
    assert result["sessions"] == 0 and result["sessions_per_s"] == 0, result
    assert all(a["sessions"] == 0 for a in result["agents"])


def test_sessions_per_s_is_on_the_time_base_of_actions_per_s(runs):
    result, tmp = runs["sessions"]
    assert result["steady"]["tested"], "the run was too short to have a steady window"
    assert 0 < result["sessions"] <= result["actions"]
    assert result["sessions"] == sum(result["per_unit"].values())  # every unit a session
    share = result["sessions"] / result["actions"]
    assert result["sessions_per_s"] == pytest.approx(result["actions_per_s"] * share, rel=1e-9)
    exported = tmp / "export.json"
    proc = bgbench("results", "export", result["experiment_id"], "--format", "json",
                   "--results", str(tmp), "-o", str(exported))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (recorded,) = json.loads(exported.read_text())["experiments"]
    assert recorded["result"]["sessions_per_s"] == result["sessions_per_s"]
    assert recorded["actions_per_s"] == result["actions_per_s"]
