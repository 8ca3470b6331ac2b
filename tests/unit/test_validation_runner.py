"""The in-memory (parallel) and out-of-core (spill files) paths give the same counts."""

from dataclasses import asdict

import numpy as np
import pytest

from bgbench.validation.checker import validate
from bgbench.validation.initial import InitialValues, save_initial
from bgbench.validation.logformat import READ, RECORD_DTYPE, LogWriter
from bgbench.validation.logset import find_logs, per_experiment, total, validate_stored
from bgbench.validation.runner import (
    item_partition,
    validate_in_memory,
    validate_logs,
    validate_out_of_core,
)
from bgbench.validation.synthetic import synthetic_logs

COUNTS = (
    "reads", "unpredictable_reads", "writes", "sessions", "unpredictable_sessions",
    "reads_by_item", "unpredictable_by_item", "reads_by_action", "unpredictable_by_action",
    "never_valid",
)  # fmt: skip


def counts(result) -> dict:
    d = asdict(result)
    out = {k: d[k] for k in COUNTS}
    out["lags"] = sorted(round(x, 6) for x in result.lags_ms)
    return out


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("logs")
    records, initial = synthetic_logs(300_000, items=20_000, stale_share=0.01, seed=5)
    paths = []
    for k, part in enumerate(np.array_split(records, 3)):  # three logs, as three fragments
        path = tmp / f"log-f{k}.bglog"
        w = LogWriter(path)
        w.append(part)
        w.close()
        paths.append(path)
    return records, initial, paths, tmp


def test_synthetic_logs_have_stale_reads_to_find(logs):
    records, initial, _, _ = logs
    result = validate(records, initial)
    assert result.unpredictable_reads > 50
    assert result.lags_ms and max(result.lags_ms) <= 50.0 + 1e-6  # stale by at most 50 ms
    assert result.unpredictable_sessions <= result.unpredictable_reads


def test_parallel_parts_match_one_pass(logs):
    records, initial, _, _ = logs
    assert counts(validate_in_memory(records, initial, workers=2)) == counts(
        validate(records, initial)
    )


@pytest.mark.slow
def test_out_of_core_matches_in_memory(logs):
    records, initial, paths, tmp = logs
    in_memory = validate(records, initial)
    tiny_budget = 4 << 20  # 4 MiB: forces many chunks
    out_of_core, chunks = validate_out_of_core(paths, initial, tiny_budget, work_dir=tmp)
    assert chunks > 3
    assert counts(out_of_core) == counts(in_memory)


@pytest.mark.slow
def test_the_runner_picks_the_engine_by_budget(logs):
    records, initial, paths, tmp = logs
    small, info = validate_logs(paths, initial, budget_bytes=4 << 20, work_dir=tmp)
    assert info.engine == "out-of-core"
    big, info = validate_logs(paths, initial, budget_bytes=8 << 30, workers=2)
    assert info.engine == "memory" and info.records == len(records)
    assert counts(small) == counts(big)


def write_experiment(directory, fragment: int, records: np.ndarray, initial) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    w = LogWriter(directory / f"log-f{fragment}.bglog")
    w.append(records)
    w.close()
    save_initial(directory / f"initial-f{fragment}.npz", initial)


def test_each_log_is_validated_against_its_own_initial_values(tmp_path):
    # Two experiments after a reload: the same item and session ids, different initial values.
    for name, value in (("e1", 5), ("e2", 9)):
        log = np.zeros(1, dtype=RECORD_DTYPE)
        log[0] = (READ, 0, 0, 0, 1, 10, 20, value, 0)
        one = InitialValues({0: (np.array([1]), np.array([value]))})
        write_experiment(tmp_path / "agent-0" / name, 0, log, one)
    logs, unfinished = find_logs(tmp_path)
    assert [log.experiment for log in logs] == ["e1", "e2"] and not unfinished
    outcomes, _ = validate_stored(logs, 1 << 30, workers=1)
    result, _ = total(outcomes, 1)
    assert (result.reads, result.unpredictable_reads) == (2, 0)
    assert result.sessions == 2  # session 0 of e1 and session 0 of e2 are two sessions
    assert [e["reads"] for e in per_experiment(outcomes)] == [1, 1]


@pytest.mark.slow
def test_small_logs_side_by_side_match_one_at_a_time(logs, tmp_path):
    records, initial, _, _ = logs
    owner = item_partition(records, 4)  # whole item histories per log, as fragments have
    for k in range(4):
        write_experiment(tmp_path / f"exp-{k}", 0, records[owner == k], initial)
    found, _ = find_logs(tmp_path)
    pooled, used = validate_stored(found, 1 << 30, workers=2)
    alone, _ = validate_stored(found, 1 << 30, workers=1)
    assert used == 2
    assert [counts(o.result) for o in pooled] == [counts(o.result) for o in alone]
    whole = validate(records, initial)
    result, _ = total(pooled, used)
    assert (result.reads, result.unpredictable_reads, result.writes) == (
        whole.reads,
        whole.unpredictable_reads,
        whole.writes,
    )
