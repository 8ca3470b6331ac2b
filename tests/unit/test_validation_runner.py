"""The in-memory (parallel) and out-of-core (DuckDB) paths give the same counts."""

from dataclasses import asdict

import numpy as np
import pytest

from bgbench.validation.checker import validate
from bgbench.validation.logformat import LogWriter
from bgbench.validation.runner import validate_in_memory, validate_logs, validate_out_of_core
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


def test_out_of_core_matches_in_memory(logs):
    records, initial, paths, tmp = logs
    in_memory = validate(records, initial)
    tiny_budget = 4 << 20  # 4 MiB: forces many chunks
    out_of_core, chunks = validate_out_of_core(paths, initial, tiny_budget, work_dir=tmp)
    assert chunks > 3
    assert counts(out_of_core) == counts(in_memory)


def test_the_runner_picks_the_engine_by_budget(logs):
    records, initial, paths, tmp = logs
    small, info = validate_logs(paths, initial, budget_bytes=4 << 20, work_dir=tmp)
    assert info.engine == "duckdb"
    big, info = validate_logs(paths, initial, budget_bytes=8 << 30, workers=2)
    assert info.engine == "memory" and info.records == len(records)
    assert counts(small) == counts(big)
