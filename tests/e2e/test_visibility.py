"""The visibility of every acknowledged write, end to end through real agents: a store that
shows writes only after a set delay shows that delay in the distribution, a correct store
shows every write visible at its end.

Both run the kv fixture workload (tests/fixtures/kvworkload) on few keys, so every key is
read many times a second: the latest read that missed a write is then close to when the
write became visible.
"""

import json
import subprocess
from pathlib import Path

import pytest

from bgbench.coordinator.storage.results import ResultsStore
from tests.fixtures.registration import KV_DELAYED_ENTRY_POINTS, environment, register
from tests.helpers import bgbench

DELAY_MS = 400.0
KEYS = 16


@pytest.fixture(scope="module")
def kv_env(tmp_path_factory) -> dict[str, str]:
    dist = tmp_path_factory.mktemp("dist")
    return environment(register(dist, "kvdelayed", KV_DELAYED_ENTRY_POINTS))


def kv_run(env: dict[str, str], tmp: Path, store: str, *extra: str) -> dict:
    proc: subprocess.CompletedProcess = bgbench(
        "run", "--workload", "kv", "--store", store, "--agents", "1", "--threads", "4",
        "--duration", "2", "--results", str(tmp), "--json", "-p", f"kv.keys={KEYS}",
        "-p", f"store.options.path={tmp / 'kv.sqlite'}", *extra, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict = json.loads(proc.stdout)
    assert result["fault"] == "", result["fault"]
    return result


def test_a_store_that_delays_its_writes_shows_the_delay_in_their_visibility(kv_env, tmp_path):
    r = kv_run(kv_env, tmp_path, "sqlite-delayed", "-p",
               f"store.options.visible_after_ms={DELAY_MS}")  # fmt: skip
    [row] = r["visibility"]
    assert (row["action"], row["item"]) == ("PUT", "counter value")
    seen = row["writes"] - row["never"] - row["unread"]
    assert seen > 10 and row["visible"]["count"] == seen, row
    assert r["unpredictable_reads"] > 0  # the stale reads are what shows the delay
    # A read misses a write only while it asks before the write's commit + delay, and the
    # commit precedes the write's end: no visibility time exceeds the delay (+0.1% for the
    # histogram's 3 significant digits).
    assert row["visible"]["max_ms"] <= DELAY_MS * 1.001, row
    # The latest read that missed a write starts less than one read of its key before the
    # write became visible; each key is read every few ms here (16 keys, hundreds of reads
    # a second even on a busy machine), so half the delay is a wide margin.
    assert row["visible"]["p50_ms"] >= DELAY_MS / 2, row
    # Writes of the last DELAY_MS of the run: every later read missed them, or none came.
    assert row["never"] + row["unread"] > 0 and r["never_visible"] == row["never"], row
    # the report's section, from the results store
    [rating] = ResultsStore(tmp_path).ratings()
    page = tmp_path / "report.html"
    shown = bgbench("report", rating["id"], "--results", str(tmp_path), "-o", str(page))
    assert shown.returncode == 0, shown.stderr
    html = page.read_text()
    assert 'id="visibility"' in html and "Write visibility time" in html
    assert f"<td>{row['never']}</td>" in html.split('id="visibility"')[1]  # as to_html writes ints


def test_a_correct_store_makes_every_write_visible_at_its_end(kv_env, tmp_path):
    r = kv_run(kv_env, tmp_path, "sqlite")
    [row] = r["visibility"]
    assert row["writes"] > 10 and row["writes"] - row["unread"] > 0, row
    assert row["never"] == 0 and row["visible"]["max_ms"] == 0, row
    assert r["unpredictable_reads"] == 0 and r["never_visible"] == 0
    [experiment] = ResultsStore(tmp_path).experiments(ResultsStore(tmp_path).ratings()[0]["id"])
    stored = json.loads(experiment["result_json"])["visibility"]
    assert stored[0]["writes"] == row["writes"] and stored[0]["hist"] == row["hist"]
