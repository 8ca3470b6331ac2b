"""A campaign whose job is a workload study (`study: load`) runs, is recorded, and shows:
a study's recorded summary is its tables, not a rating's."""

import json
import subprocess

from tests.helpers import BGBENCH


def test_a_study_job_runs_and_shows(tmp_path):
    (tmp_path / "study.yaml").write_text(
        "campaign: one-study\n"
        "jobs:\n"
        "  - study: load\n"
        "    workload: {name: sensorlog}\n"
        f"    store: {{name: sqlite, options: {{path: {tmp_path / 's.sqlite'}}}}}\n"
        "    params: {sensorlog.study.sizes: [500], sensorlog.study.runs: 1}\n"
    )
    results = tmp_path / "results"
    run = subprocess.run(
        [*BGBENCH, "campaign", "run", str(tmp_path / "study.yaml"), "--results", str(results),
         "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    outcome = json.loads(run.stdout)
    assert outcome["status"] == "done"
    (job,) = outcome["jobs"]
    assert job["status"] == "done" and job["rating_id"] and job["summary"] is None
    show = subprocess.run(
        [*BGBENCH, "campaign", "show", outcome["campaign_id"], "--results", str(results)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert show.returncode == 0 and "done" in show.stdout, show.stderr
