"""`bgbench report` and `bgbench compare` through the CLI on a real SQLite rating (and a
model-store one beside it), and their bad input: one line, exit status 2."""

import re

import pytest

from tests.helpers import bgbench


@pytest.fixture(scope="module")
def two_ratings(sqlite_rating) -> tuple[str, str, str]:
    results, sqlite_id = sqlite_rating
    proc = bgbench("rate", "--store", "model", "--results", str(results), "--json",
                   "-p", "model.noise=0.05")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    model_id = re.search(r'"rating_id": "([^"]+)"', proc.stdout)
    assert model_id is not None
    return str(results), sqlite_id, model_id.group(1)


def test_report_writes_one_html_file_and_the_figures_asked_for(sqlite_rating, tmp_path):
    results, rating_id = sqlite_rating
    out = tmp_path / "rating.html"
    proc = bgbench("report", rating_id, "--results", str(results), "-o", str(out),
                   "--format", "png")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert f"Rating {rating_id} of sqlite" in text
    figures = re.findall(r'<figure class="chart" id="([\w-]+)">', text)
    assert {"throughput", "within", "latency", "unpredictable", "latency-histogram",
            "agents", "actions"} <= set(figures)  # fmt: skip
    assert sorted(p.name for p in tmp_path.glob("rating-*.png")) == sorted(
        f"rating-{f}.png" for f in figures
    )
    assert f"wrote {out}" in proc.stdout


def test_compare_prints_ratings_side_by_side(two_ratings, tmp_path):
    results, sqlite_id, model_id = two_ratings
    out = tmp_path / "cmp.html"
    proc = bgbench("compare", sqlite_id, model_id, "--results", results, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sqlite_id in proc.stdout and model_id in proc.stdout
    assert "store.name" in proc.stdout  # a setting that differs, as a dotted path
    assert re.search(r"within noise|higher by", proc.stdout)
    html = out.read_text()
    assert "Settings that differ" in html and "store.name" in html


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["report", "R-none"], "no rating, run or campaign 'R-none'"),
        (["report", "{id}", "-o", "/nonexistent-dir/r.html"], "/nonexistent-dir does not exist"),
        (["report", "{id}", "--format", "gif"], "use png or svg"),
        (["compare", "{id}"], "two rating ids at least"),
        (["compare", "{id}", "R-none"], "no rating 'R-none'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(sqlite_rating, args, needle):
    results, rating_id = sqlite_rating
    proc = bgbench(*[a.format(id=rating_id) for a in args], "--results", str(results))
    assert proc.returncode == 2
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_missing_results_store_is_not_created(tmp_path):
    proc = bgbench("report", "R1", "--results", str(tmp_path / "none"))
    assert proc.returncode == 2 and "no results store" in proc.stderr
    assert not (tmp_path / "none").exists()


SMALL_SENSORLOG = ["-p", "sensorlog.database.machines=6", "-p", "sensorlog.database.readings=500"]


@pytest.mark.parametrize(
    ("study", "extra", "against"),
    [
        ("load", ["-p", "sensorlog.study.sizes=[3000,6000]", "-p", "sensorlog.study.runs=2"],
         ["rows"]),
        ("queries", [], ["rows", "selectivity %"]),
    ],
)  # fmt: skip
def test_a_study_report_draws_its_times(tmp_path, study, extra, against):
    proc = bgbench(
        "study", study, "--workload", "sensorlog", "--store", "sqlite", "--json",
        "--results", str(tmp_path), "-p", f"store.options.path={tmp_path / 's.sqlite'}",
        *SMALL_SENSORLOG, *extra,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rating_id = re.search(r'"rating_id": "([^"]+)"', proc.stdout)
    assert rating_id is not None
    out = tmp_path / "study.html"
    proc = bgbench("report", rating_id.group(1), "--results", str(tmp_path), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    figures = re.findall(r'<figure class="chart" id="([\w%-]+)">', text)
    assert figures == [f"study-{study}"] + [
        f"study-{study}-{i}" for i in range(2, 1 + len(against))
    ]
    for x in against:
        assert f"measurements against {x}, mean of the runs" in text
