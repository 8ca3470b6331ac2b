"""A scenario's figures: the result types' round trip through the results store's JSON
(older records load without them)."""

import json

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
