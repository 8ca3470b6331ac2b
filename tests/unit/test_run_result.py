"""The run-result family: exact merges, the wire round trip, the results store's JSON."""

import dataclasses
import json
import random

from hdrh.histogram import HdrHistogram

from bgbench.protos import new_histogram
from bgbench.protos import worker_pb2 as pb
from bgbench.run_result import (
    ActionStats,
    AgentOutcome,
    ErrorCount,
    ExperimentResult,
    RunResult,
    Steadiness,
)


def encoded(values: list[int]) -> bytes:
    h = new_histogram()
    for v in values:
        h.record_value(v)
    return h.encode()


def counts(data: bytes) -> dict[int, int]:
    h = HdrHistogram.decode(data)
    return {i: h.get_count_at_index(i) for i in range(h.counts_len) if h.get_count_at_index(i)}


def process_run(seed: int, threads: int = 2, **figures) -> tuple[RunResult, list[int]]:
    rng = random.Random(seed)
    values = [rng.randint(1, 5_000_000) for _ in range(500)]
    figures = {"start_state": "carry", **figures}
    run = RunResult(
        threads=threads,
        elapsed=1.0 + seed,
        actions=500,
        sessions=20,
        errors=1,
        per_action={
            "VP": ActionStats(300, 1, encoded(values[:300]), encoded(values[:300])),
            "IF": ActionStats(200, 0, encoded(values[300:]), encoded(values[300:])),
        },
        per_unit={"VP": 300, "IF": 200},
        error_counts=[ErrorCount("VP", "TimeoutError", 1, "timed out")],
        cpu_seconds=0.5,
        embedded=True,
        log_records=40,
        store_counters={"hits": seed},
        session_hist=encoded(values[:20]),
        client_delay_hist=encoded(values[:10]),
        loop_lag_max_ms=float(seed),
        concurrency="asyncio",
        workload_payload=json.dumps({"fragment": seed}),
        fragment=seed,
        **figures,
    )
    return run, values


def test_merging_load_processes_is_exact_and_follows_each_figures_rule():
    a, va = process_run(1, saturated=False)
    b, vb = process_run(2, aborted="store down", start_state="reload")
    idle, _ = process_run(3, threads=0, saturated=True)  # an idle process's CPU says nothing
    run = RunResult.merge([a, b, idle])
    assert run.actions == 1500 and run.errors == 3 and run.threads == 4
    assert run.per_action["VP"].count == 900 and run.per_action["VP"].errors == 3
    every_vp = va[:300] + vb[:300] + process_run(3)[1][:300]
    assert counts(run.per_action["VP"].response_hist) == counts(encoded(every_vp))
    assert run.elapsed == 4.0 and run.loop_lag_max_ms == 3.0
    assert run.saturated is False and run.embedded is True
    assert run.store_counters == {"hits": 6} and run.per_unit == {"VP": 900, "IF": 600}
    assert len(run.error_counts) == 3
    assert run.aborted == "store down"
    assert run.start_state == "carry; reload"
    assert json.loads(run.workload_payload) == [{"fragment": 1}, {"fragment": 2}, {"fragment": 3}]
    assert run.load_processes == 3 and run.fragment == -1
    assert RunResult.merge([a, dataclasses.replace(b, saturated=True)]).saturated is True


def test_a_run_crosses_the_wire_unchanged():
    run = dataclasses.replace(
        RunResult.merge([process_run(1)[0], process_run(2)[0]]), log_dir="/logs/x"
    )
    message = run.to_proto()
    assert isinstance(message, pb.RunResult)
    assert message.elapsed_seconds == run.elapsed and message.engine_saturated == run.saturated
    assert [a.action for a in message.per_action] == ["VP", "IF"]
    back = RunResult.from_proto(pb.RunResult.FromString(message.SerializeToString()))
    assert back == run


def test_duplicate_action_rows_from_an_agent_are_pooled():
    message = pb.RunResult(
        per_action=[
            pb.ActionStats(action="VP", count=2, errors=0, response_hist=encoded([5, 6])),
            pb.ActionStats(action="VP", count=1, errors=1, response_hist=encoded([7])),
        ]
    )
    vp = RunResult.from_proto(message).per_action["VP"]
    assert (vp.count, vp.errors) == (3, 1)
    assert counts(vp.response_hist) == counts(encoded([5, 6, 7]))


def experiment() -> ExperimentResult:
    runs = [process_run(1)[0], process_run(2)[0]]
    outcomes = [AgentOutcome("a:1", 2), AgentOutcome("b:1", 2)]
    for out, run in zip(outcomes, runs, strict=True):
        out.take_run(run, 3.0, 1_000_000)
        out.passed = True
    result = ExperimentResult.of_agents(("E1", 4, 2.0, "sqlite"), outcomes, runs, str, 1_000_000)
    result.steady = Steadiness(interval_s=0.5, throughput=[1.0, 2.0], within=[None, 99.0])
    return result


def test_an_experiment_pools_its_agents():
    result = experiment()
    assert result.actions == 1000 and result.errors == 2 and result.passed
    assert [a.action for a in result.per_action] == ["IF", "VP"]
    assert result.per_action[1].count == 600
    assert result.agents[0].store_counters == {"hits": 1} and result.store_counters == {"hits": 3}
    assert result.agents[1].start_state == "carry" and result.agents[1].log_records_written == 40
    assert result.overall.count == 1000
    assert result.status == "passed"


def test_the_store_json_keeps_its_names_and_reads_back():
    result = experiment()
    record = json.loads(json.dumps(result.to_record()))
    assert list(record)[:4] == ["experiment_id", "threads", "duration_s", "elapsed_s"]
    assert {"response_hist", "session_hist", "run_payload", "client_delay_p99_ms"} <= set(
        record["agents"][0]
    )
    assert ExperimentResult.from_record(record) == result
    # an older record: figures it lacks take their defaults, unknown keys are left
    older = {k: v for k, v in record.items() if k not in ("target_rate", "steady", "lag")}
    older["agents"] = [{k: v for k, v in a.items() if k != "run_payload"} for a in record["agents"]]
    older["from_a_later_bgbench"] = 1
    back = ExperimentResult.from_record(older)
    assert back.target_rate == 0.0 and back.steady is None and back.agents[0].run_payload == []
    assert back.per_action == result.per_action
