"""`--target-rate` through the CLI: an open-loop experiment on SQLite serves the rate it
was asked for, records it, and reports response time from each intended start; bad
pacing is refused before anything runs."""

import json

from tests.helpers import bgbench


def test_an_open_loop_run_serves_its_rate(tmp_path):
    proc = bgbench(
        "run", "--store", "sqlite", "--agents", "1", "--processes", "1", "--users", "400",
        "--threads", "4", "--duration", "4", "--target-rate", "800", "--json",
        "--results", str(tmp_path), "-p", f"store.options.path={tmp_path / 'bg.sqlite'}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["target_rate"] == 800
    assert 0.75 * 800 <= r["actions_per_s"] <= 1.25 * 800  # paced, far below closed loop
    assert r["steady"]["throughput"] and r["steady"]["interval_s"] > 0
    for a in r["per_action"]:  # response counts from the intended start: never shorter
        assert a["response"]["p99_ms"] >= a["service"]["p99_ms"] * 0.99


def test_a_negative_rate_and_double_pacing_are_refused(tmp_path):
    bad = bgbench("run", "--store", "sqlite", "--target-rate", "-5", "--results", str(tmp_path))
    assert bad.returncode == 2 and "run.target_rate" in bad.stderr
    both = bgbench(
        "run", "--store", "sqlite", "--target-rate", "100", "-p", "interarrivaltime=5",
        "--results", str(tmp_path),
    )  # fmt: skip
    assert both.returncode == 2 and "interarrivaltime" in both.stderr
    assert len(both.stderr.strip().splitlines()) == 1
