"""Fuzzing the results-store reader (issue 24): a store with random pages damaged, or
random contents in its rows, is read by every reader (the store's own, the export, the
DataFrames of bgbench.results.load). Only two outcomes are allowed: the figures, or one
UserError naming the store; never another exception, never a hang. Bounded for CI by
max_examples (a few seconds); the store fuzzed is a real model-store rating."""

import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgbench import results
from bgbench.coordinator.storage.results import DB_NAME, ResultsStore
from bgbench.errors import UserError
from tests.unit.report_ratings import model_rating

FUZZ = settings(  # BGBENCH_FUZZ_EXAMPLES=2000 searches longer, off CI
    max_examples=int(os.environ.get("BGBENCH_FUZZ_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# JSON columns and others, of every table a reader reads.
COLUMNS = [
    ("ratings", "config_json"), ("ratings", "summary_json"), ("ratings", "hosts_json"),
    ("ratings", "versions_json"), ("ratings", "workload_config_json"), ("ratings", "soar"),
    ("ratings", "socialites"), ("ratings", "workload"), ("ratings", "status"),
    ("experiments", "result_json"), ("experiments", "threads"), ("experiments", "status"),
    ("experiments", "phase"), ("experiments", "actions_per_s"), ("experiments", "reasons"),
]  # fmt: skip
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(1 << 70), 1 << 70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("fuzzed") / "results"
    model_rating(where, "R1", "model.peak=1e4")
    return where


def read_everything(where: Path) -> None:
    """Every reader of a results store, as the CLI, the report and the deck use them."""
    store = ResultsStore.existing(where)
    store.ratings()
    store.rating("R1")
    store.experiments("R1")
    store.known_runs("R1")
    store.export("R1", "json", where.parent / "R1.json")
    store.export("R1", "csv", where.parent / "R1.csv")
    frames = results.load(where)
    if not frames.experiments.empty:
        frames.result("R1", int(frames.experiments["seq"].iloc[0]))


def only_user_errors(where: Path) -> None:
    try:
        read_everything(where)
    except UserError as exc:
        assert str(where / DB_NAME) in str(exc) and "\n" not in str(exc), exc


def _copy(recorded: Path) -> Path:
    where = Path(tempfile.mkdtemp(prefix="bgbench-fuzz-")) / "results"
    shutil.copytree(recorded, where)
    return where


@FUZZ
@given(data=st.data())
@pytest.mark.slow
def test_damaged_pages_are_read_or_refused(recorded, data):
    where = _copy(recorded)
    try:
        raw = bytearray((where / DB_NAME).read_bytes())
        for _ in range(data.draw(st.integers(1, 4), label="damages")):
            at = data.draw(st.integers(0, len(raw) - 1), label="offset")
            junk = data.draw(st.binary(min_size=1, max_size=64), label="bytes")
            raw[at : at + len(junk)] = junk
        if data.draw(st.booleans(), label="cut"):
            raw = raw[: data.draw(st.integers(1, len(raw)), label="length")]
        (where / DB_NAME).write_bytes(bytes(raw))
        only_user_errors(where)
    finally:
        shutil.rmtree(where.parent)


@FUZZ
@given(
    column=st.sampled_from(COLUMNS),
    value=st.one_of(
        json_values.map(json.dumps),
        st.text(max_size=40),
        st.binary(max_size=40),
        st.integers(-(1 << 63), (1 << 63) - 1),
        st.floats(),
        st.none(),
    ),
)
@pytest.mark.slow
def test_random_row_contents_are_read_or_refused(recorded, column, value):
    where = _copy(recorded)
    try:
        table, name = column
        try:
            with sqlite3.connect(where / DB_NAME) as db:
                db.execute(f"UPDATE {table} SET {name} = ?", (value,))
        except sqlite3.IntegrityError:  # a NULL where the schema forbids one: not a store
            return
        finally:
            db.close()
        only_user_errors(where)
    finally:
        shutil.rmtree(where.parent)


@FUZZ
@given(
    result=json_values, key=st.sampled_from(["agents", "per_action", "steady", "lag", "overall"])
)
@pytest.mark.slow
def test_a_result_of_the_wrong_shape_is_read_or_refused(recorded, result, key):
    """A result_json that is JSON, with one of the parts readers look into replaced."""
    where = _copy(recorded)
    try:
        with sqlite3.connect(where / DB_NAME) as db:
            rows = db.execute("SELECT seq, result_json FROM experiments").fetchall()
            for seq, text in rows:
                data = json.loads(text)
                data[key] = result
                db.execute(
                    "UPDATE experiments SET result_json = ? WHERE seq = ?", (json.dumps(data), seq)
                )
        db.close()
        only_user_errors(where)
    finally:
        shutil.rmtree(where.parent)
