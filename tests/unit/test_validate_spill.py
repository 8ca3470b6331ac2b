"""Out of core (spill files by item) gives the in-memory checker's counts, within the budget."""

import tracemalloc
from dataclasses import asdict

import numpy as np
import pytest

from bgbench.validation.checker import validate
from bgbench.validation.logformat import LogWriter
from bgbench.validation.runner import OUT_OF_CORE, validate_logs
from bgbench.validation.spill import (
    MIN_PART_RECORDS,
    item_keys,
    part_records_for,
    partition_of,
    validate_spilled,
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
    out["never_visible"] = result.visibility.never_total
    return out


def write_logs(records: np.ndarray, directory, files: int = 2) -> list:
    paths = []
    for k, part in enumerate(np.array_split(records, files)):
        path = directory / f"log-f{k}.bglog"
        w = LogWriter(path)
        for lo in range(0, len(part), 7_000):  # several blocks per log
            w.append(part[lo : lo + 7_000])
        w.close()
        paths.append(path)
    return paths


def test_every_record_of_an_item_goes_to_one_part_and_parts_are_used():
    records, _ = synthetic_logs(50_000, items=5_000, seed=3)
    keys = item_keys(records)
    part = partition_of(keys, 0, 16)
    assert part.min() >= 0 and part.max() < 16
    first_part = {}
    for k, p in zip(keys.tolist(), part.tolist(), strict=True):
        assert first_part.setdefault(k, p) == p
    sizes = np.bincount(part, minlength=16)
    assert sizes.min() > 0.5 * sizes.mean()  # a hash that spreads items
    # another salt splits a part afresh: its items scatter over the parts again
    again = partition_of(keys[part == 0], 1, 16)
    assert len(np.unique(again)) == 16


@pytest.mark.parametrize("workers", [1, 2])
def test_out_of_core_matches_in_memory_within_its_budget(tmp_path, workers):
    records, initial = synthetic_logs(120_000, items=8_000, stale_share=0.01, seed=7)
    whole = validate(records, initial)
    paths = write_logs(records, tmp_path)
    budget = 4 << 20  # parts of the smallest size: many of them
    tracemalloc.start()
    try:
        spilled, parts = validate_spilled(paths, initial, budget, workers, work_dir=tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert parts >= 10
    assert counts(spilled) == counts(whole)
    assert whole.unpredictable_reads > 50 and whole.unpredictable_sessions > 0
    if workers == 1:  # numpy's buffers are traced: this process held no more than its budget
        assert peak <= budget
    assert not list(tmp_path.glob("bgbench-spill-*"))  # the spill files are gone


def test_items_larger_than_a_part_are_split_again_or_kept_whole(tmp_path):
    # three hot items, each with more records than a part holds: a part that got two of them
    # is split again, one that holds a single item is validated whole
    records, initial = synthetic_logs(
        5 * MIN_PART_RECORDS, items=3, stale_share=0.02, seed=11, theta=0.99
    )
    assert np.bincount(records["item_id"]).min() > part_records_for(1, 1)
    whole = validate(records, initial)
    spilled, parts = validate_spilled(write_logs(records, tmp_path), initial, 1, 1, tmp_path)
    assert parts == 3
    assert counts(spilled) == counts(whole)


def test_the_runner_reports_the_out_of_core_engine(tmp_path):
    records, initial = synthetic_logs(30_000, items=2_000, seed=2)
    paths = write_logs(records, tmp_path)
    result, info = validate_logs(paths, initial, budget_bytes=64 << 10, work_dir=tmp_path)
    assert (info.engine, info.records, info.workers) == (OUT_OF_CORE, len(records), 1)
    assert info.parts >= 1 and counts(result) == counts(validate(records, initial))
