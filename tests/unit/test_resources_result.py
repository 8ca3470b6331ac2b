"""An experiment keeps its resources (and older records read back without them); the
verdict under sla.client_bound; the rating's bottleneck is its final experiment's; the
console shows it, a client-bound one loudly; an experiment's collection of samples."""

import json

from rich.console import Console

from bgbench.coordinator.configuration.config import SLAConfig, load_settings
from bgbench.coordinator.execution.experiment import judge_resources
from bgbench.coordinator.execution.resource_watch import (
    MAX_SAMPLES,
    ExperimentResources,
    rated_window,
)
from bgbench.coordinator.interfaces.console import with_bottleneck
from bgbench.coordinator.rating.bottleneck_of import final_bottleneck
from bgbench.coordinator.rating.ratings import RatingSummary
from bgbench.coordinator.records.metrics import client_bound_reason
from bgbench.protos import worker_pb2 as pb
from bgbench.resources.model import (
    Bottleneck,
    GroupSample,
    HostFigures,
    HostSample,
    ResourceFigures,
)
from bgbench.run_result import AgentOutcome, ExperimentResult
from bgbench.run_result.experiment import Steadiness

CLIENT = Bottleneck(
    kind="client",
    resource="a load process's core",
    host="vm",
    used=0.97,
    capacity=1.0,
    utilisation=0.97,
    text="a load process at 97% of its core on vm",
    client_bound=True,
    others=["host CPU 1.90 of 2 cores busy on vm"],
)


def resources(bottleneck: Bottleneck = CLIENT) -> ResourceFigures:
    sample = HostSample(
        "boot vm", "vm", "agent", 1.0, 0.5, [0.5, 0.25], load=GroupSample(0.7, 2.0, 0.6)
    )
    host = HostFigures("boot vm", "vm", "agent", samples=1, cores=2, cpu_cores=0.75)
    return ResourceFigures([host], bottleneck, {"agent a:1": [sample]}, (0.5, 4.0), ["n"])


def passing(threads: int = 4) -> ExperimentResult:
    agents = [AgentOutcome("a:1", 2, passed=True), AgentOutcome("b:1", 2, passed=True)]
    result = ExperimentResult.faulted("E1", threads, 4.0, "sqlite", agents, "", 0.0)
    result.passed = True
    return result


def test_resources_are_kept_with_the_result_and_read_back():
    result = passing()
    result.resources = resources()
    record = json.loads(json.dumps(result.to_record()))
    assert record["resources"]["bottleneck"]["client_bound"] is True
    assert record["resources"]["hosts"][0]["cpu_cores"] == 0.75
    back = ExperimentResult.from_record(record)
    assert back.resources == result.resources and back.bottleneck == CLIENT
    older = {k: v for k, v in record.items() if k != "resources"}
    assert ExperimentResult.from_record(older).resources is None
    assert ExperimentResult.from_record(older).bottleneck is None


def test_client_bound_fails_only_when_the_sla_says_so():
    warn, fail = SLAConfig(), SLAConfig(client_bound="fail")
    assert client_bound_reason(resources(), warn) == ""
    assert client_bound_reason(None, fail) == ""
    assert client_bound_reason(resources(Bottleneck(kind="none")), fail) == ""
    assert client_bound_reason(resources(), fail) == (
        "client-bound: a load process at 97% of its core on vm"
    )
    kept = passing()
    kept.resources = resources()
    assert judge_resources(kept, warn).passed
    failed = passing()
    failed.resources = resources()
    judge_resources(failed, fail)
    assert not failed.passed and failed.status == "failed"
    assert failed.reasons() == "a:1: client-bound: a load process at 97% of its core on vm"


def row(seq: int, phase: str, threads: int, kind: str, status: str = "passed") -> dict:
    result = passing(threads)
    result.resources = resources(Bottleneck(kind=kind, text=f"{kind} at {seq}"))
    return {
        "seq": seq,
        "phase": phase,
        "threads": threads,
        "status": status,
        "result_json": json.dumps(result.to_record()),
    }


def test_the_ratings_bottleneck_is_its_final_experiments():
    rows = [
        row(1, "warmup", 8, "client"),
        row(2, "search", 4, "none"),
        row(3, "search", 8, "server_cpu"),
        row(4, "final", 8, "client"),
        row(5, "final", 8, "server_cpu"),
        row(6, "final", 4, "none"),
        row(7, "retried", 8, "client", status="fault"),
    ]
    assert final_bottleneck(rows, 8).text == "server_cpu at 5"  # the last final at SoAR's T
    assert final_bottleneck(rows[:4], 8).text == "client at 4"
    assert final_bottleneck(rows[:3], 8).text == "server_cpu at 3"  # no final: the run at T
    assert final_bottleneck(rows[:3], 16).text == "server_cpu at 3"  # else the last rated
    assert final_bottleneck(rows[:1], 8) is None  # a warm-up is not rated
    unmeasured = {**rows[2], "result_json": json.dumps(passing().to_record())}
    assert final_bottleneck([unmeasured], 8) is None  # the model store, or an older record
    assert final_bottleneck([{**rows[2], "result_json": "{not json"}], 8) is None


def test_the_summary_carries_the_bottleneck_in_its_json():
    summary = RatingSummary("R1", "both", "sqlite", 1.0, 2.0, soar=10.0, bottleneck=CLIENT)
    data = json.loads(json.dumps(summary.to_dict()))
    assert data["bottleneck"]["kind"] == "client" and data["bottleneck"]["client_bound"]
    assert RatingSummary.from_dict(data) == summary
    older = {k: v for k, v in data.items() if k != "bottleneck"}
    assert RatingSummary.from_dict(older).bottleneck is None


def shown(bottleneck: Bottleneck | None) -> str:
    console = Console(width=200, record=True)
    console.print(with_bottleneck("SoAR 10.0 actions/s", bottleneck))
    return console.export_text()


def test_the_console_says_what_bound_it_and_a_client_bound_one_loudly():
    text = shown(CLIENT)
    assert "Bottleneck: a load process at 97% of its core on vm" in text
    assert "also saturated: host CPU 1.90 of 2 cores" in text
    assert "WARNING: client-bound" in text
    calm = shown(Bottleneck(kind="none", text="no resource saturated: ..."))
    assert "Bottleneck: no resource saturated" in calm and "WARNING" not in calm
    assert shown(None).strip() == "SoAR 10.0 actions/s"


def test_an_experiments_samples_by_agent_and_bounded():
    collected = ExperimentResources(["a:1", "b:1"], [])
    sample = HostSample("boot vm", "vm", "agent", 1.0, 0.5, [0.5]).to_proto()
    collected.progress(0, pb.Progress(elapsed_seconds=1.0))  # the final one: no sample
    for _ in range(MAX_SAMPLES + 5):
        collected.progress(1, pb.Progress(elapsed_seconds=1.0, host=sample))
    assert collected.series["agent a:1"] == []
    assert len(collected.series["agent b:1"]) == MAX_SAMPLES
    result = passing()
    figures = collected.finish(result, load_settings(None, []))
    assert figures.hosts[0].samples == MAX_SAMPLES
    assert any("dropped" in n for n in figures.notes)


def test_the_rated_window_is_the_steady_one():
    result = passing()
    assert rated_window(result) == (0.0, 4.0)
    result.steady = Steadiness(interval_s=0.5, warmup_s=1.5, window_s=2.5)
    assert rated_window(result) == (1.5, 4.0)
    result.steady = Steadiness(interval_s=0.5, warmup_s=0.0, window_s=0.0, tested=False)
    assert rated_window(result) == (0.0, 4.0)
