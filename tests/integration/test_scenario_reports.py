"""A scenario's figures from real progress streams, stored and reported: two real runs of
SQLite through a local agent each feed a ScenarioRecorder from their live progress events
(two steps cut each run into three phases; the steps' labels and a run step's output are
hostile text), the figures are kept with the stored experiment, and then the results
frames, `bgbench report` (HTML and console) and a campaign's report over both runs show
them: the timeline chart, the per-phase table, the jobs side by side, every untrusted text
escaped."""

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from bgbench import results
from bgbench.coordinator.configuration.config import Settings, load_settings, parse_override
from bgbench.coordinator.rating import api
from bgbench.coordinator.records.events import AgentProgress, AgentsRunning, Event
from bgbench.coordinator.reports import html_report
from bgbench.coordinator.scenario.phases import ScenarioRecorder
from bgbench.coordinator.storage.campaign_rows import (
    NewCampaign,
    NewJob,
    insert_campaign,
    update_job,
)
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.run_result import ExperimentResult, StepRecord
from tests.helpers import bgbench
from tests.unit.test_report_html import figures_of

HOSTILE_LABEL = "<b>restart</b> & $x$ {{n2}}"
HOSTILE_OUTPUT = "<script>alert(1)</script>\n<img src=x onerror=alert(2)>"
STEP_AT = (1.0, 2.5)  # s of each agent's run at which the two steps start
DURATION_S = 4.0


class Steps:
    """An event sink standing in for the scenario's timeline: the recorder made when the
    agents start, fed each progress as it arrives; a step's boundary when the run's
    progress first reaches its offset."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.recorder: ScenarioRecorder | None = None
        self.started: list[float] = []
        self.lock = threading.Lock()

    def emit(self, event: Event) -> None:
        with self.lock:
            if isinstance(event, AgentsRunning):
                self.recorder = ScenarioRecorder(
                    event.addresses, self.settings, duration_s=event.duration_s
                )
                self.started = []
            elif isinstance(event, AgentProgress) and self.recorder is not None:
                now = time.monotonic()
                self.recorder.progress(event.agent, now, event.progress)
                while (
                    len(self.started) < len(STEP_AT)
                    and event.progress.elapsed_seconds >= STEP_AT[len(self.started)]
                ):
                    self.recorder.boundary(len(self.started), now)
                    self.started.append(now - self.recorder.started)

    def steps(self) -> list[StepRecord]:
        s = self.started + [None] * (2 - len(self.started))
        return [
            StepRecord(0, STEP_AT[0], "pause", "n2", started_s=s[0], ended_s=s[0], ok=True,
                       detail="paused pid <1234>"),
            StepRecord(1, STEP_AT[1], "run", label=HOSTILE_LABEL, started_s=s[1],
                       ended_s=s[1], ok=False, detail="exit 3: <b>bold</b>", exit_status=3,
                       output=HOSTILE_OUTPUT),
        ]  # fmt: skip


def scenario_run(where: Path, threads: int) -> tuple[str, ExperimentResult]:
    """A real run with a scenario's figures kept in its stored record: (rating id, result)."""
    pairs = [
        "store.name=sqlite", f"store.options.path={where / f'bg{threads}.sqlite'}",
        "usercount=300", "agents.local=1", "agents.processes=1", f"results_dir={where}",
        f"run.threadcount={threads}", f"run.maxexecutiontime={DURATION_S}",
        "agents.heartbeat_timeout=60",
    ]  # fmt: skip
    settings = load_settings(None, [parse_override(p) for p in pairs])
    sink = Steps(settings)
    record = api.run(settings, events=sink)
    result = record.result
    assert not result.fault, result.fault
    assert sink.recorder is not None
    result.scenario = sink.recorder.finish(sink.steps())
    rating_id = result.experiment_id
    with sqlite3.connect(ResultsStore(where).path) as db:
        changed = db.execute(
            "UPDATE experiments SET result_json = ? WHERE rating_id = ?",
            (json.dumps(result.to_record()), rating_id),
        ).rowcount
    assert changed == 1
    return rating_id, result


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[Path, list[tuple[str, ExperimentResult]]]:
    where = tmp_path_factory.mktemp("scenario-report")
    runs = [scenario_run(where, 1), scenario_run(where, 2)]
    store = ResultsStore(where)
    insert_campaign(
        store,
        NewCampaign("C1", "through <failures>", "c.yaml", "jobs: []", "test", str(where)),
        [NewJob(i + 1, f"T={t} <one>", "{}", "{}", "[]", "") for i, t in enumerate((1, 2))],
    )
    for i, (rid, _) in enumerate(runs):
        update_job(store, "C1", i + 1, "done", {"rating_id": rid})
    return where, runs


def test_the_phases_account_for_every_action_of_the_run(stored):
    _, runs = stored
    for _, result in runs:
        scenario = result.scenario
        assert scenario is not None and len(scenario.phases) == 3
        assert sum(p.actions for p in scenario.phases) == result.actions
        assert sum(p.errors for p in scenario.phases) == result.errors == 0
        first, second, third = scenario.phases
        assert first.actions_per_s > 0 and second.actions > 0 and third.actions > 0
        assert 0 < second.start_s < third.start_s < third.end_s == DURATION_S
        assert third.label == HOSTILE_LABEL and second.label == "pause n2"
        assert len(scenario.timeline.t_s) >= 6  # 0.5 s intervals over 4 s
        assert max(scenario.timeline.throughput) > 0


def test_the_frames_hold_the_steps_and_phases(stored):
    where, runs = stored
    frames = results.load(where)
    rid, result = runs[0]
    steps = frames.of_rating(frames.steps, rid)
    phases = frames.of_rating(frames.phases, rid)
    assert list(steps["step"]) == [0, 1] and list(steps["exit_status"].isna()) == [True, False]
    assert steps["exit_status"].iloc[1] == 3 and steps["reached"].all()
    assert list(phases["phase"]) == [0, 1, 2]
    assert phases["actions"].sum() == result.actions
    intervals, bins = frames.scenario_timeline(rid, 1)
    assert len(intervals) == len(result.scenario.timeline.t_s) and bins.empty


def test_a_run_report_draws_the_timeline_and_tables_the_phases(stored, tmp_path):
    where, runs = stored
    rid, _ = runs[0]
    out = tmp_path / "run.html"
    html_report.report(results.load(where), rid, out)
    text = out.read_text()
    found = figures_of(text)
    assert found.paths.get("scenario-1", 0) > 10, found.paths
    assert "throughput back s" in text and "SLA back s" in text and "unavailable s" in text
    # untrusted text escaped everywhere: in tables, in the <pre>, in the chart's svg
    assert "<script>alert" not in text and "<img src=x" not in text and "<b>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;b&gt;restart&lt;/b&gt; &amp; $x$" in text


def test_a_campaign_report_sets_the_jobs_side_by_side_per_phase(stored, tmp_path):
    where, runs = stored
    out = tmp_path / "campaign.html"
    proc = bgbench("report", "C1", "--results", str(where), "-o", str(out), "--format", "png")
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "Scenario phases, job by job" in text
    assert "1: T=1 &lt;one&gt;" in text and "2: T=2 &lt;one&gt;" in text
    assert "0: baseline" in text and "2: &lt;b&gt;restart" in text
    for rid, _ in runs:
        assert (tmp_path / f"campaign-{rid}-scenario-1.png").read_bytes().startswith(b"\x89PNG")
    # the console's per-phase table, once per job
    assert proc.stdout.count("per phase") == 2 and "baseline" in proc.stdout
    assert "<b>restart</b>" in proc.stdout  # a console shows text as it is, never as markup
