"""Reports open in a real browser (Debian's headless Chromium through selenium): no console
error, every expected chart present with a drawn svg, a screenshot kept as the test's
artefact. Of a real SQLite rating, and of a real campaign (SQLite and the model store)."""

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.browser import headless_chromium, installed
from tests.helpers import BGBENCH, bgbench

RATING_CHARTS = ["throughput", "within", "latency", "unpredictable", "latency-histogram",
                 "agents", "actions"]  # fmt: skip

pytestmark = pytest.mark.skipif(
    not installed(),
    reason="Debian's chromium and chromedriver are not installed (scripts/test installs them)",
)


@pytest.fixture
def browser(tmp_path):
    with headless_chromium(tmp_path / "chromium-profile") as driver:
        yield driver


def open_report(driver: webdriver.Chrome, page: Path, shot: Path) -> dict[str, int]:
    """Open the page; the console errors fail the test; each chart's id -> the shapes its
    svg draws. The screenshot is the test's artefact."""
    driver.get(page.as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    charts: dict[str, int] = {}
    for figure in driver.find_elements(By.CSS_SELECTOR, "figure.chart"):
        svg = figure.find_element(By.TAG_NAME, "svg")
        assert svg.size["width"] > 100 and svg.size["height"] > 100
        charts[figure.get_attribute("id") or ""] = len(
            svg.find_elements(By.CSS_SELECTOR, "path, use")
        )
    assert driver.save_screenshot(str(shot))
    assert shot.read_bytes().startswith(b"\x89PNG")
    return charts


def test_a_rating_report_opens_with_every_chart(sqlite_rating, browser, tmp_path):
    results, rating_id = sqlite_rating
    page = tmp_path / "rating.html"
    proc = bgbench("report", rating_id, "--results", str(results), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    charts = open_report(browser, page, tmp_path / "rating.png")
    for chart in RATING_CHARTS:
        assert charts.get(chart, 0) > 5, f"{chart}: {charts}"
    headline = browser.find_element(By.CSS_SELECTOR, "p.headline").text
    assert headline.startswith("SoAR ")


CAMPAIGN = """
campaign: report-check
templates:
  quick:
    sla: {delta_search_s: 1, delta_s: 1}
    rating: {objective: soar, max_threads: 4, final_runs: 2, repeats: 1}
    agents: {local: 1, processes: 2}
  sqlite:
    extends: quick
    store: {name: sqlite, options: {path: "DATA/${mix}.sqlite"}}
  model:
    extends: quick
    store: {name: model}
    model: {noise: 0.05}
jobs:
  - extends: ${store}
    foreach: {store: [sqlite, model], mix: [low, high]}
    params: {mix: "${mix}", usercount: 400}
"""


def run_campaign(tmp_path: Path) -> tuple[Path, dict]:
    """A real campaign (SQLite through a local agent, and the model store; two mixes each)
    through `bgbench campaign run`; its results directory and --json outcome. Its process
    group is killed in any case: the agents it spawned go with it."""
    spec = tmp_path / "campaign.yaml"
    spec.write_text(CAMPAIGN.replace("DATA", str(tmp_path)))
    results = tmp_path / "results"
    proc = subprocess.Popen(
        [*BGBENCH, "campaign", "run", str(spec), "--results", str(results), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 0, err
    return results, json.loads(out)


def test_a_real_campaign_report_opens_with_its_comparison(browser, tmp_path):
    results, outcome = run_campaign(tmp_path)
    assert [j["status"] for j in outcome["jobs"]] == ["done"] * 4, outcome
    page = tmp_path / "campaign.html"
    proc = bgbench("report", outcome["campaign_id"], "--results", str(results), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    charts = open_report(browser, page, tmp_path / "campaign.png")
    assert charts.get("campaign-soar", 0) > 5, charts
    # grouped by the first foreach value, a bar colour per the other
    soar = browser.find_element(By.ID, "campaign-soar").text
    for label in ("store=sqlite", "store=model", "mix=low", "mix=high"):
        assert label in soar, soar
    jobs = browser.find_element(By.XPATH, "//h2[text()='Jobs']/following-sibling::table[1]")
    rows = jobs.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == [
        j["label"] for j in outcome["jobs"]
    ]
    for job in outcome["jobs"]:  # a section per rating, with its own figures
        rid = job["rating_id"]
        assert browser.find_element(By.ID, f"rating-{rid}").is_displayed()
        assert charts.get(f"{rid}-throughput", 0) > 5, charts
    assert_overlaid(browser, charts, [j["label"] for j in outcome["jobs"]])


OVERLAY = ["throughput", "within", "p95", "unpredictable"]


def assert_overlaid(driver: webdriver.Chrome, charts: dict[str, int], labels: list[str]) -> None:
    """The campaign's overlay charts are shown, each named for assistive technology and
    drawing one curve per rating, its legend naming the foreach values."""
    for metric in OVERLAY:
        ident = f"overlay-{metric}"
        assert charts.get(ident, 0) > 5, charts
        figure = driver.find_element(By.ID, ident)
        assert figure.is_displayed()
        svg = figure.find_element(By.TAG_NAME, "svg")
        assert svg.aria_role in ("img", "image")  # ARIA 1.3 calls role img "image"
        assert svg.accessible_name.endswith("one curve per rating: " + "; ".join(labels))
        curves = figure.find_elements(By.CSS_SELECTOR, f"g[id^='{ident}-curve-']")
        assert len(curves) == len(labels), (ident, len(curves))
        assert all(c.find_elements(By.TAG_NAME, "path") for c in curves)
        legend = [t.text for t in svg.find_elements(By.TAG_NAME, "text") if t.text in labels]
        assert legend == labels, (ident, legend)
