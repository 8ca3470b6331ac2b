"""A scenario's figures: the result types' round trip through the results store's JSON
(older records load without them), and the recorder that cuts the progress streams into
phases: phase attribution, unavailability, recovery, the SLA per phase, several agents,
reads per phase from the validations."""

import json
from collections.abc import Callable

import pytest
from rich.console import Console

from bgbench.coordinator.configuration.config import Settings, load_settings
from bgbench.coordinator.reports import charts, charts_scenario
from bgbench.coordinator.reports.report_scenario import render_scenario
from bgbench.coordinator.scenario import phases
from bgbench.coordinator.scenario.phases import MAX_LEAD, ScenarioRecorder
from bgbench.protos import new_histogram
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result import (
    ExperimentResult,
    PhaseFigures,
    ScenarioFigures,
    StepRecord,
    Timeline,
)
from bgbench.run_result.histograms import LatencySummary


def stored_experiment(scenario: ScenarioFigures | None) -> ExperimentResult:
    empty = LatencySummary.empty()
    result = ExperimentResult(
        "E1", 4, 40.0, 40.0, "cassandra", 100, 0, 3, 2.5, 0.0, 99.0, 0.0, 10, 0, [], empty,
        [], True,
    )  # fmt: skip
    result.scenario = scenario
    return result


def figures() -> ScenarioFigures:
    steps = [
        StepRecord(0, 10.0, "kill", "n2", started_s=10.02, ended_s=10.3, ok=True, detail="x"),
        StepRecord(1, 20.0, "run", label="<b>restart</b>", exit_status=1, output="é\n"),
    ]
    phases = [
        PhaseFigures(0, "baseline", 0.0, 10.02, actions=50, actions_per_s=5.0),
        PhaseFigures(
            1, "kill n2", 10.02, 40.0, errors=3, recover_throughput_s=None,
            recover_sla_s=4.5, meets_sla=False, reasons=["errors: 3 actions failed"],
        ),
    ]  # fmt: skip
    timeline = Timeline(0.5, [0.5, 1.0], [4.0, 5.0], [1.2, None], [0.0, 2.0], [99.0, None])
    return ScenarioFigures(steps, phases, timeline)


def test_a_scenario_round_trips_through_the_stored_json():
    result = stored_experiment(figures())
    record = json.loads(json.dumps(result.to_record()))
    assert record["scenario"]["steps"][1]["label"] == "<b>restart</b>"
    back = ExperimentResult.from_record(record)
    assert back == result
    assert back.scenario is not None and back.scenario.steps[1].reached is False
    assert back.scenario.steps[0].text == "kill n2"
    assert back.scenario.steps[1].text == "<b>restart</b>"
    assert back.scenario.phases[1].duration_s == 40.0 - 10.02


def test_older_records_load_without_a_scenario_and_unknown_keys_are_left():
    record = json.loads(json.dumps(stored_experiment(None).to_record()))
    del record["scenario"]
    assert ExperimentResult.from_record(record).scenario is None
    later = json.loads(json.dumps(stored_experiment(figures()).to_record()))
    later["scenario"]["phases"][0]["from_a_later_bgbench"] = 1
    later["scenario"]["timeline"] = None
    back = ExperimentResult.from_record(later).scenario
    assert back is not None and back.phases[0].actions == 50 and back.timeline == Timeline()


# The recorder on synthetic progress streams with known answers. Each agent reports every
# 0.5 s; `lateness` is how long after its send the coordinator received a report.

STARTED = 1000.0  # the coordinator's monotonic clock at the experiment's start
SPACING = 0.5


def settings(**sla: float) -> Settings:
    values = {"alpha": 95.0, "beta_ms": 100.0, **sla}
    return load_settings(None, [(f"sla.{k}", v) for k, v in values.items()])


def delta(latencies_ms: list[tuple[float, int]]) -> bytes:
    h = new_histogram()
    for ms, count in latencies_ms:
        if count:
            h.record_value(int(ms * 1000), count)
    return h.encode() if h.get_total_count() else b""


class Agent:
    """One agent's cumulative counts, reported to a recorder."""

    def __init__(self, recorder: ScenarioRecorder, index: int, origin: float) -> None:
        self.recorder, self.index, self.origin = recorder, index, origin
        self.elapsed = 0.0
        self.actions = self.errors = self.timeouts = 0

    def tick(self, ok: int, failed: int = 0, timed_out: int = 0, ok_ms: float = 10.0,
             failed_ms: float = 2000.0, lateness: float = 0.01) -> None:  # fmt: skip
        self.elapsed += SPACING
        self.actions += ok + failed
        self.errors += failed
        self.timeouts += timed_out
        p = pb.Progress(
            elapsed_seconds=self.elapsed,
            actions=self.actions,
            errors=self.errors,
            timeouts=self.timeouts,
            response_hist_delta=delta([(ok_ms, ok), (failed_ms, failed)]),
        )
        self.recorder.progress(self.index, self.origin + self.elapsed + lateness, p)


def kill_and_restart() -> tuple[ScenarioRecorder, list[StepRecord]]:
    """One agent at 100 actions/s; a kill at 8 s leaves 4 s of timeouts, then the store
    serves again; a start at 15 s changes nothing."""
    recorder = ScenarioRecorder(1, settings(), started=STARTED, duration_s=20.0)
    agent = Agent(recorder, 0, STARTED)
    steps = [
        StepRecord(0, 8.0, "kill", "n2", started_s=8.0, ended_s=8.2, ok=True),
        StepRecord(1, 15.0, "start", "n2", started_s=15.0, ended_s=16.0, ok=True),
    ]
    for i in range(40):  # intervals ending at 0.5 .. 20.0 s
        t = (i + 1) * SPACING
        if t == 8.5:
            recorder.boundary(0, STARTED + 8.0)
        if t == 15.5:
            recorder.boundary(1, STARTED + 15.0)
        if 8.0 < t <= 12.0:
            agent.tick(0, failed=5, timed_out=5)
        else:
            agent.tick(50)
    return recorder, steps


def test_phases_are_cut_at_the_steps_with_their_figures():
    recorder, steps = kill_and_restart()
    figures = within_their_phases(recorder.finish(steps))
    base, killed, started = figures.phases
    assert (base.label, killed.label, started.label) == ("baseline", "kill n2", "start n2")
    assert (base.start_s, base.end_s, killed.end_s, started.end_s) == (0.0, 8.0, 15.0, 20.0)
    assert base.actions == 16 * 50 and base.errors == 0
    assert base.actions_per_s == pytest.approx(100.0)
    assert base.unavailable_s == 0.0 and base.meets_sla
    assert base.recover_throughput_s is None and base.recover_sla_s is None
    # 8 intervals of errors only, then 6 at full speed: 300 actions over 7 s
    assert (killed.actions, killed.errors, killed.timeouts) == (340, 40, 40)
    assert killed.actions_per_s == pytest.approx(300 / 7.0)
    assert killed.unavailable_s == pytest.approx(4.0)
    assert killed.recover_throughput_s == pytest.approx(4.0, abs=0.02)  # 10 ms late reports
    assert killed.recover_sla_s == pytest.approx(4.0, abs=0.02)
    assert killed.p95_ms == pytest.approx(2000, rel=0.01)  # 40 of 340 took 2 s
    assert killed.within_percent == pytest.approx(100 * 300 / 340)
    assert not killed.meets_sla and any("errors: 40" in r for r in killed.reasons)
    assert "unavailable: 4.0 s with no successful action" in killed.reasons
    assert started.recover_throughput_s == pytest.approx(0.0, abs=0.02) and started.meets_sla
    assert started.actions_per_s == pytest.approx(100.0)


def test_the_timeline_carries_each_interval():
    recorder, steps = kill_and_restart()
    timeline = recorder.finish(steps).timeline
    assert timeline.interval_s == pytest.approx(0.5) and len(timeline.t_s) == 40
    assert timeline.t_s[0] == pytest.approx(0.5, abs=0.02)
    assert timeline.t_s[-1] == pytest.approx(20.0, abs=0.02)
    assert timeline.throughput[15] == pytest.approx(100.0) and timeline.throughput[16] == 0
    assert timeline.errors_per_s[16] == pytest.approx(10.0)
    assert timeline.p95_ms[16] == pytest.approx(2000, rel=0.01)
    assert timeline.p95_ms[0] == pytest.approx(10, rel=0.01)
    assert timeline.within[16] == 0.0 and timeline.within[0] == 100.0
    assert timeline.bin_s == 1.0


def test_the_load_starting_is_not_unavailability():
    recorder = ScenarioRecorder(1, settings(), started=STARTED, duration_s=5.0)
    agent = Agent(recorder, 0, STARTED)
    for i in range(10):
        agent.tick(0 if i in (0, 1, 6) else 50)  # two intervals starting, one lost later
    (base,) = recorder.finish([]).phases
    assert base.unavailable_s == pytest.approx(0.5) and not base.meets_sla


def test_a_store_that_never_recovers_has_no_recovery_time():
    recorder = ScenarioRecorder(1, settings(), started=STARTED, duration_s=10.0)
    agent = Agent(recorder, 0, STARTED)
    for i in range(20):
        if i == 10:
            recorder.boundary(0, STARTED + 5.0)
        # after the kill: half the throughput, within beta: recovered for the SLA only
        agent.tick(50 if i < 10 else 25)
    killed = recorder.finish([StepRecord(0, 5.0, "kill", "n1", started_s=5.0)]).phases[1]
    assert killed.recover_throughput_s is None
    assert killed.recover_sla_s == pytest.approx(0.0, abs=0.02)
    assert killed.unavailable_s == 0.0 and killed.actions_per_s == pytest.approx(50.0)


def within_their_phases(figures: ScenarioFigures) -> ScenarioFigures:
    for phase in figures.phases:
        assert 0.0 <= phase.unavailable_s <= phase.end_s - phase.start_s, phase
    return figures


def test_unavailability_stays_within_the_run_when_calls_stay_stuck_past_its_end():
    """The store dies at 5 s of a 10 s run and its calls stay stuck: the agent reports
    empty intervals until 16 s. The last phase ends at the run's end: 5 s unavailable."""
    recorder = ScenarioRecorder(1, settings(), started=STARTED, duration_s=10.0)
    agent = Agent(recorder, 0, STARTED)
    for i in range(32):
        if i == 10:
            recorder.boundary(0, STARTED + 5.0)
        agent.tick(50 if i < 10 else 0)
    figures = within_their_phases(recorder.finish([StepRecord(0, 5.0, "kill", "postgres")]))
    base, killed = figures.phases
    assert (killed.start_s, killed.end_s) == (5.0, 10.0)
    assert killed.unavailable_s == pytest.approx(5.0 - 0.01, abs=0.02)
    assert base.unavailable_s == 0.0


def test_an_interval_across_a_step_is_unavailable_time_on_both_sides():
    recorder = ScenarioRecorder(1, settings(), started=STARTED, duration_s=4.0)
    agent = Agent(recorder, 0, STARTED)
    for i in range(8):
        if i == 5:
            recorder.boundary(0, STARTED + 2.25)  # inside the 6th interval (2.5 .. 3.0 s)
        agent.tick(0 if i in (4, 5) else 50, lateness=0.0)
    base, killed = within_their_phases(recorder.finish([StepRecord(0, 2.25, "kill", "n1")])).phases
    assert base.unavailable_s == pytest.approx(0.25)  # 2.0 .. 2.25
    assert killed.unavailable_s == pytest.approx(0.75)  # 2.25 .. 3.0


def test_agents_are_placed_on_the_coordinators_clock_and_merged_by_interval():
    """Two agents: the second started 0.3 s after the first and its reports arrive late
    by varying amounts; its clock is taken from its earliest-arriving report. Reports and
    the step reach the recorder in the order they happen."""
    recorder = ScenarioRecorder(["a:1", "b:1"], settings(), started=STARTED, duration_s=10.0)
    events: list[tuple[float, Callable[[], None]]] = [
        (STARTED + 5.0, lambda: recorder.boundary(0, STARTED + 5.0))
    ]
    first, second = Agent(recorder, 0, STARTED), Agent(recorder, 1, STARTED + 0.3)
    for i in range(20):
        late = 0.4 if i % 3 else 0.02
        events.append((STARTED + (i + 1) * SPACING + 0.01, lambda: first.tick(10, ok_ms=10.0)))
        events.append(
            (
                STARTED + 0.3 + (i + 1) * SPACING + late,
                lambda late=late: second.tick(10, ok_ms=200.0, lateness=late),
            )
        )
    for _, happen in sorted(events, key=lambda e: e[0]):
        happen()
    assert recorder.phase_starts_for(0) == [pytest.approx(5.0, abs=0.02)]
    assert recorder.phase_starts_for(1) == [pytest.approx(4.7, abs=0.03)]
    figures = recorder.finish([StepRecord(0, 5.0, "pause", "n3", started_s=5.0)])
    base, paused = figures.phases
    # the second agent's 10th interval (4.8 .. 5.3 s) is mostly after the step
    assert (base.actions, paused.actions) == (100 + 90, 100 + 110)
    assert base.actions_per_s == pytest.approx(40.0)  # 20/s from each agent
    assert figures.timeline.throughput[3] == pytest.approx(40.0)
    # half the interval's actions took 200 ms: the merged p95 is theirs, not 10 ms
    assert figures.timeline.p95_ms[3] == pytest.approx(200, rel=0.01)
    assert base.within_percent == pytest.approx(100 * 100 / 190) and not base.meets_sla
    assert figures.timeline.bin_start_s == pytest.approx(0.16, abs=0.02)  # median of 2


def test_a_long_run_keeps_a_bounded_timeline(monkeypatch):
    monkeypatch.setattr(phases, "MAX_POINTS", 10)
    recorder = ScenarioRecorder(1, settings(), started=STARTED, duration_s=20.0)
    agent = Agent(recorder, 0, STARTED)
    for i in range(40):
        agent.tick(50 if i % 2 else 0, ok_ms=10.0 if i < 20 else 200.0)
    figures = within_their_phases(recorder.finish([]))
    t = figures.timeline
    assert len(t.t_s) == 10 and t.interval_s == pytest.approx(2.0)
    assert t.throughput == [pytest.approx(50.0)] * 10  # 100/s half the time
    assert t.p95_ms[0] == pytest.approx(10, rel=0.01) and t.p95_ms[-1] == pytest.approx(
        200, rel=0.01
    )
    assert figures.phases[0].unavailable_s == pytest.approx(9.5)  # at full resolution


def test_a_silent_agent_does_not_hold_the_timeline_back():
    recorder = ScenarioRecorder(2, settings(), started=STARTED, duration_s=30.0)
    talking, silent = Agent(recorder, 0, STARTED), Agent(recorder, 1, STARTED)
    silent.tick(5)
    for _ in range(60):
        talking.tick(5)
    assert len(recorder._pending) <= MAX_LEAD + 1  # what it keeps waiting for is bounded
    silent.tick(5)  # a straggler: counted in its phase all the same
    figures = recorder.finish([])
    assert figures.phases[0].actions == 62 * 5
    assert len(figures.timeline.t_s) == 60


def test_reads_staleness_and_series_come_from_the_validations():
    recorder, steps = kill_and_restart()
    lag = new_histogram()
    lag.record_value(300_000, 3)  # 300 ms
    replies = [
        pb.ValidateReply(
            phases=[
                pb.PhaseReads(reads=100, unpredictable=0),
                pb.PhaseReads(reads=50, unpredictable=3, lag_hist=lag.encode()),
                pb.PhaseReads(reads=60),
            ],
            series_reads=[10, 20, 30],
            series_unpredictable=[0, 1],
        ),
        pb.ValidateReply(phases=[pb.PhaseReads(reads=100)], series_reads=[1]),
        RuntimeError("an agent that failed to validate"),
    ]
    figures = recorder.finish(steps, replies)
    base, killed, started = figures.phases
    assert (base.reads, killed.reads, started.reads) == (200, 50, 60)
    assert killed.unpredictable == 3 and killed.unpredictable_percent == pytest.approx(6.0)
    assert killed.lag_p95_ms == pytest.approx(300, rel=0.01) and base.lag_max_ms == 0.0
    assert any(r.startswith("staleness") for r in killed.reasons)
    assert figures.timeline.reads == [11, 20, 30]
    assert figures.timeline.unpredictable == [0, 1]
    assert figures.timeline.bin_start_s == pytest.approx(0.01)  # the agent's run start


def test_a_tau_above_the_phase_share_keeps_it_within_the_sla():
    recorder = ScenarioRecorder(1, settings(tau=10.0), started=STARTED, duration_s=2.0)
    agent = Agent(recorder, 0, STARTED)
    for _ in range(4):
        agent.tick(5)
    replies = [pb.ValidateReply(phases=[pb.PhaseReads(reads=100, unpredictable=5)])]
    (base,) = recorder.finish([], replies).phases
    assert base.unpredictable_percent == 5.0 and base.meets_sla


def test_hostile_labels_are_drawn_and_printed_as_text():
    """A lone `$` would be math to matplotlib (and fail); `[red]` would be markup to rich."""
    scenario = figures()
    scenario.steps[0].label = "kill $n2 [red]now[/red] <x>"
    scenario.phases[1].label = scenario.steps[0].label
    fig = charts_scenario.timeline(scenario, "run $1", beta_ms=100.0)
    assert fig is not None
    svg = charts.svg(fig)
    assert "1: kill $n2 [red]now[/red] &lt;x&gt;" in svg and "<x>" not in svg
    assert charts_scenario.literal("a" * 100).endswith("…")
    console = Console(record=True, width=200)
    console.print(render_scenario(scenario))
    text = console.export_text()
    assert "kill $n2 [red]now[/red] <x>" in text and "baseline" in text
    assert "not reached" in text  # the second step never ran


def test_an_empty_timeline_draws_nothing():
    assert charts_scenario.timeline(ScenarioFigures(), "run", 100.0) is None
