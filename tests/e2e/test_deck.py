"""`bgbench deck` as a user meets it: in headless Chromium (settings checked as typed, a
real SQLite rating started, followed live to its SoAR), its token rule, and stopping and
resuming a rating through its API."""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.live_helpers import end, free_port, spawn, wait_for
from tests.helpers import BGBENCH

ROOT = Path(__file__).resolve().parents[2]

INVALID = '[store]\nname = "nope"\n'


def small_rating(tmp: Path, max_threads: int = 8, search_s: int = 1, final_s: int = 2) -> str:
    return (
        f'[store]\nname = "sqlite"\n[store.options]\npath = "{tmp / "deck.sqlite"}"\n'
        f'[rating]\nobjective = "soar"\nmax_threads = {max_threads}\nfinal_runs = 2\n'
        f"[sla]\ndelta_search_s = {search_s}\ndelta_s = {final_s}\n"
        "[agents]\nlocal = 1\nprocesses = 1\n[bg.database]\nusercount = 300\n"
    )


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, ""


def post(url: str, body: dict, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def csrf_token(page: str) -> str:
    """The anti-forgery token a deck page carries for its script ("" on a page without)."""
    found = re.search(r'data-csrf="([A-Za-z0-9_-]+)"', page)
    return found[1] if found else ""


class Deck:
    def __init__(self, tmp: Path, *options: str) -> None:
        self.port = port = free_port()
        args = ["deck", "--port", str(port), "--results", str(tmp / "res"), *options]
        self.proc = spawn(args, tmp / "deck.log", tmp)
        self.url = f"http://127.0.0.1:{port}"
        self.log = tmp / "deck.log"
        self.own: dict[str, str] = {}  # what the deck's own page sends with a change

    def started(self) -> "Deck":
        wait_for(lambda: get(self.url + "/")[0] == 200 or self.proc.poll() is not None, "the deck")
        assert self.proc.poll() is None, self.log.read_text()
        self.own = {"Origin": self.url, "X-BGBench-CSRF": csrf_token(get(self.url + "/")[1])}
        return self


@contextlib.contextmanager
def chromium(tmp_path: Path, *extra: str):
    """Debian's headless Chromium under selenium, quit on leaving."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (Path("/usr/bin/chromium").exists() and Path("/usr/bin/chromedriver").exists()):
        pytest.fail("Debian's chromium and chromedriver are needed (scripts/test installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=1200,1500", *extra,
    ):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path) as driver:
        yield driver


def severe(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_a_rating_started_and_followed_in_the_browser(deck, browser, tmp_path):
    base = deck.url
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 300, poll_frequency=0.2)
    browser.get(base + "/")
    assert severe(browser) == []
    text = browser.find_element(By.ID, "settings-text")
    shown = browser.find_element(By.ID, "validation")
    text.send_keys(INVALID)
    wait.until(lambda _: "unknown store 'nope'" in shown.text)
    assert shown.get_attribute("class") == "invalid"
    browser.save_screenshot(str(tmp_path / "deck-invalid.png"))

    text.clear()
    text.send_keys(small_rating(tmp_path))
    wait.until(lambda _: shown.text == "valid")
    name = browser.find_element(By.ID, "settings-name")
    name.clear()
    name.send_keys("small.toml")
    browser.find_element(By.ID, "start").click()

    wait.until(lambda d: "/jobs/" in d.current_url)
    wait.until(lambda d: any(r.text.startswith("SoAR ") for r in d.find_elements(By.ID, "result")))
    result = browser.find_element(By.ID, "result")
    assert " actions/s at T=" in result.text
    rating_id = browser.find_element(By.ID, "rating-id").text
    assert rating_id.startswith("R")
    verdicts = browser.find_elements(By.CSS_SELECTOR, "#verdicts li")
    assert any(v.text.startswith("final T=") for v in verdicts)
    assert browser.find_element(By.ID, "throughput").text not in ("", "-")
    assert browser.find_elements(By.CSS_SELECTOR, "#agents-body tr")
    # each agent's host as it last sampled it, and what bound each experiment
    cells = [r.find_elements(By.TAG_NAME, "td") for r in
             browser.find_elements(By.CSS_SELECTOR, "#agents-body tr")]  # fmt: skip
    shown = [c[7].text for c in cells]
    assert all(re.fullmatch(r"[\d.,]+ of \d+(, store [\d.,]+)?", x) for x in shown), shown
    judged = [v.text for v in verdicts if v.get_attribute("class") != "fault"]
    assert all(re.search(r"; (bottleneck|CLIENT-BOUND): .+", v) for v in judged), judged
    wait.until(lambda _: browser.find_element(By.ID, "job-status").text == "exited 0")
    browser.save_screenshot(str(tmp_path / "deck-rating.png"))
    if os.environ.get("BGBENCH_DECK_SCREENSHOT"):  # docs/images/deck.png, on request
        shutil.copy(tmp_path / "deck-rating.png", ROOT / os.environ["BGBENCH_DECK_SCREENSHOT"])
    assert severe(browser) == []

    browser.get(base + "/ratings")
    row = browser.find_element(By.LINK_TEXT, rating_id)
    assert "done" in browser.find_element(By.ID, "ratings").text
    row.click()
    wait.until(lambda d: d.current_url.endswith(f"/ratings/{rating_id}/report"))
    # The URL changes when the navigation starts; the report (a `bgbench report` process)
    # arrives later, as its charts or as the deck's one-line error.
    wait.until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "figure.chart svg") or '"error"' in d.page_source
    )
    charts = browser.find_elements(By.CSS_SELECTOR, "figure.chart svg")  # bgbench report's
    assert charts, browser.page_source[:2000]
    assert "final" in browser.page_source
    browser.save_screenshot(str(tmp_path / "deck-report.png"))
    assert severe(browser) == []


def test_the_page_s_changes_carry_its_token_by_either_loopback_name(deck, browser, tmp_path):
    """The deck's script sends its anti-forgery token (and the browser its Origin): saving
    and checking work from the page, opened as 127.0.0.1 and as localhost."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 300, poll_frequency=0.2)
    for base, name in (
        (deck.url, "by-address.toml"),
        (f"http://localhost:{deck.port}", "by-name.toml"),
    ):
        browser.get(base + "/")
        text = browser.find_element(By.ID, "settings-text")
        text.send_keys(small_rating(tmp_path))
        shown = browser.find_element(By.ID, "validation")
        wait.until(lambda _, shown=shown: shown.text == "valid")
        field = browser.find_element(By.ID, "settings-name")
        field.clear()
        field.send_keys(name)
        browser.find_element(By.ID, "save").click()
        said = browser.find_element(By.ID, "start-error")
        wait.until(lambda _, said=said: said.text)  # "saved NAME", or why it was refused
        assert said.text == f"saved {name}"
        assert (tmp_path / "res" / "deck" / "settings" / name).read_text().startswith("[store]")
        assert severe(browser) == []


def test_stop_records_an_interrupted_rating_and_resume_continues_it(deck, tmp_path):
    base = deck.url
    long = {"name": "long.toml", "text": small_rating(tmp_path, 64, 30, 30)}
    assert post(base + "/api/settings", long, deck.own)[0] == 200
    code, job = post(base + "/api/jobs", {"kind": "rate", "name": "long.toml"}, deck.own)
    assert code == 200, job
    events = tmp_path / "res" / "deck" / "jobs" / f"{job['id']}.events.jsonl"
    wait_for(lambda: '"kind":"progress"' in events.read_text(), "the first progress tick")
    assert post(base + f"/api/jobs/{job['id']}/stop", {}, deck.own)[0] == 200

    def status(job_id: str) -> str:
        listed = json.loads(get(base + "/api/jobs")[1])["jobs"]
        return next(j["status"] for j in listed if j["id"] == job_id)

    ended = wait_for(lambda: (s := status(job["id"])) != "running" and s, "the job to end")
    assert ended == "exited 130"  # bgbench's interrupted exit
    last = json.loads(events.read_text().splitlines()[-1])
    assert last["kind"] == "rating_end" and last["status"] == "interrupted"
    rid = last["rating_id"]
    page = get(base + "/ratings")[1]
    assert rid in page and "failed" in page and f'data-resume="{rid}"' in page

    code, again = post(base + f"/api/jobs/{job['id']}/resume", {}, deck.own)
    assert code == 200, again
    resumed = tmp_path / "res" / "deck" / "jobs" / f"{again['id']}.events.jsonl"
    wait_for(lambda: '"kind":"progress"' in resumed.read_text(), "the resumed rating's progress")
    start = json.loads(resumed.read_text().split("\n", 1)[0])
    assert start["kind"] == "rating_start" and start["rating_id"] == rid and start["resumed"]

    # Ending the deck ends the job it started (its lifespan, by PID): recorded as interrupted.
    end(deck.proc, signal.SIGTERM)  # uvicorn shuts down, then exits by the signal it caught
    with pytest.raises(ProcessLookupError):
        os.kill(again["pid"], 0)
    last = json.loads(resumed.read_text().splitlines()[-1])
    assert last["kind"] == "rating_end" and last["status"] == "interrupted"


def test_beyond_loopback_the_deck_needs_a_token(tmp_path):
    proc = subprocess.run(
        [*BGBENCH, "deck", "--host", "0.0.0.0", "--port", str(free_port())],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "BGBENCH_DECK_TOKEN"},
    )  # fmt: skip
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "--host 0.0.0.0" in line and "--token" in line


def test_with_a_token_every_request_carries_it(tmp_path):
    secret = "s3cret-deck-token"
    port = free_port()
    proc = spawn(
        ["deck", "--port", str(port), "--results", str(tmp_path / "res")],
        tmp_path / "deck.log",
        tmp_path,
        env={"BGBENCH_DECK_TOKEN": secret},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: get(base + "/")[0] == 401 or proc.poll() is not None, "the deck")
        assert proc.poll() is None
        assert get(base + "/")[0] == 401
        assert get(base + "/?token=wrong")[0] == 401
        assert get(base + "/ratings", {"Authorization": "Bearer wrong"})[0] == 401
        assert post(base + "/api/validate", {"name": "a.toml", "text": ""})[0] == 401
        assert get(base + "/api/jobs/J1/stream")[0] == 401
        assert get(base + f"/?token={secret}")[0] == 200
        assert get(base + "/ratings", {"Authorization": f"Bearer {secret}"})[0] == 200
        ok = post(base + "/api/validate", {"name": "a.toml", "text": INVALID},
                  {"Authorization": f"Bearer {secret}"})  # fmt: skip
        assert ok[0] == 200 and ok[1]["valid"] is False
    finally:
        end(proc, signal.SIGTERM)
    assert secret not in (tmp_path / "deck.log").read_text()  # never printed


def campaign_file(tmp: Path) -> str:
    return (
        "campaign: deck-one\njobs:\n"
        f'  - store: {{name: sqlite, options: {{path: "{tmp / "campaign.sqlite"}"}}}}\n'
        "    sla: {delta_search_s: 1, delta_s: 1}\n"
        "    rating: {objective: soar, max_threads: 4, final_runs: 2, repeats: 1}\n"
        "    agents: {local: 1, processes: 1}\n"
        "    params: {usercount: 300}\n"
    )


def kinds(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_campaign_started_stopped_and_resumed_from_the_deck(deck, tmp_path):
    base = deck.url
    bad = post(
        base + "/api/validate",
        {"name": "c.yaml", "text": "jobs: []\n", "kind": "campaign"},
        deck.own,
    )
    assert (
        bad[0] == 200 and bad[1]["valid"] is False and "non-empty list of jobs" in bad[1]["message"]
    )
    text = campaign_file(tmp_path)
    good = post(
        base + "/api/validate", {"name": "c.yaml", "text": text, "kind": "campaign"}, deck.own
    )
    assert good[1] == {"valid": True, "message": "valid"}
    assert post(base + "/api/settings", {"name": "c.yaml", "text": text}, deck.own)[0] == 200
    code, job = post(base + "/api/jobs", {"kind": "campaign", "name": "c.yaml"}, deck.own)
    assert code == 200, job
    jobs_dir = tmp_path / "res" / "deck" / "jobs"
    events = jobs_dir / f"{job['id']}.events.jsonl"
    wait_for(lambda: '"kind":"progress"' in events.read_text(), "the campaign's first progress")
    assert post(base + f"/api/jobs/{job['id']}/stop", {}, deck.own)[0] == 200
    wait_for(lambda: '"kind":"campaign_end"' in events.read_text(), "the campaign's end")
    first = kinds(events)
    assert first[0]["kind"] == "campaign_start" and first[1]["kind"] == "rating_start"
    assert first[-1]["status"] == "interrupted"
    cid = first[0]["campaign_id"]

    def ended(job_id: str) -> str:
        listed = json.loads(get(base + "/api/jobs")[1])["jobs"]
        status = next(j["status"] for j in listed if j["id"] == job_id)
        return "" if status == "running" else status

    assert wait_for(lambda: ended(job["id"]), "the stopped campaign's exit") == "exited 130"
    assert f'data-resume-campaign="{cid}"' in get(base + "/ratings")[1]

    code, again = post(base + f"/api/jobs/{job['id']}/resume", {}, deck.own)
    assert code == 200, again
    assert wait_for(lambda: ended(again["id"]), "the resumed campaign's exit") == "exited 0"
    second = kinds(jobs_dir / f"{again['id']}.events.jsonl")
    assert second[0] == {**second[0], "kind": "campaign_start", "campaign_id": cid, "resumed": True}
    assert second[-1] == {**second[-1], "kind": "campaign_end", "status": "done"}
    rating_ends = [e for e in second if e["kind"] == "rating_end"]
    assert rating_ends and rating_ends[-1]["status"] == "done" and rating_ends[-1]["soar"] > 0
    assert any(e["kind"] == "verdict" for e in second)
    page = get(base + "/ratings")[1]
    assert cid in page and "1/1" in page
