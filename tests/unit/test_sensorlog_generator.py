"""The sensor-log generator: deterministic series whose prefixes are smaller loads,
valid intervals chained, values bounded but for rare spikes, exact thresholds, machine
fragments sized by capacity, the CSV file; and its settings."""

import csv

import numpy as np
import pytest
from pydantic import ValidationError

from bgbench.errors import UserError
from bgbench.workloads.sensorlog.config import (
    PAPER_SELECTIVITIES,
    SensorLogConfig,
    SensorLogDatabaseConfig,
    resolve_mix,
)
from bgbench.workloads.sensorlog.generator import (
    all_values,
    machine_rows,
    readings_for,
    series_rows,
    split_machines,
    thresholds,
    write_csv,
)
from bgbench.workloads.sensorlog.workload import WORKLOAD

DB = SensorLogDatabaseConfig(machines=6, sensors=4, readings=2000, seed=3)


def test_a_smaller_load_is_a_prefix_of_a_larger_one():
    short, long = series_rows(DB, 2, 1, 300), series_rows(DB, 2, 1, 2000)
    for a, b in zip(short, long, strict=True):
        assert np.array_equal(a, b[:300])


def test_the_same_seed_gives_the_same_series_and_another_seed_another():
    again = series_rows(DB, 1, 3, 500)
    assert all(np.array_equal(a, b) for a, b in zip(series_rows(DB, 1, 3, 500), again, strict=True))
    other = series_rows(DB.model_copy(update={"seed": 4}), 1, 3, 500)
    assert not np.array_equal(other.mv, again.mv)


def test_each_reading_is_valid_until_the_next_begins():
    r = series_rows(DB, 0, 0, 1000)
    assert np.all(r.et > r.bt)
    assert np.array_equal(r.et[:-1], r.bt[1:])
    gaps = np.diff(r.bt)
    assert gaps.min() >= DB.period_ms // 2 and gaps.max() < DB.period_ms * 3 // 2
    assert abs(gaps.mean() - DB.period_ms) < DB.period_ms * 0.05


def test_values_stay_in_bounds_but_for_rare_spikes():
    v = all_values(DB, DB.readings)
    sig = DB.signal
    assert v.min() >= sig.low
    above = np.count_nonzero(v > sig.high)
    spikes = sig.spike_probability * len(v)
    assert 0 < above < 3 * spikes  # spikes only, about as many as drawn
    assert len(np.unique(v)) == len(v)  # distinct: thresholds select exact counts


@pytest.mark.parametrize("percent", PAPER_SELECTIVITIES)
def test_each_threshold_selects_its_fraction_of_the_rows_within_one_row(percent):
    v = all_values(DB, DB.readings)
    [th] = thresholds(v, [percent])
    selected = int(np.count_nonzero(v > th.x))
    assert selected == th.rows
    assert abs(selected - percent / 100 * len(v)) <= 1


def test_thresholds_fall_as_selectivity_rises():
    v = all_values(DB, DB.readings)
    xs = [t.x for t in thresholds(v, sorted(PAPER_SELECTIVITIES))]
    assert xs == sorted(xs, reverse=True)


def test_a_machine_holds_every_sensor_in_key_order():
    r = machine_rows(DB, 5, 10)
    assert len(r) == DB.sensors * 10
    keys = list(zip(r.m.tolist(), r.s.tolist(), r.bt.tolist(), strict=True))
    assert keys == sorted(keys) and set(r.m.tolist()) == {5}


@pytest.mark.parametrize(
    ("machines", "capacities", "sizes"),
    [(6, (1.0,), [6]), (6, (1.0, 1.0), [3, 3]), (7, (2.0, 1.0), [5, 2]), (3, (1, 1, 1), [1, 1, 1])],
)
def test_machines_split_into_contiguous_ranges_by_capacity(machines, capacities, sizes):
    ranges = split_machines(machines, capacities)
    assert [len(r) for r in ranges] == sizes
    assert [m for r in ranges for m in r] == list(range(machines))


def test_fragment_sizes_count_series_and_an_empty_fragment_is_refused():
    cfg = SensorLogConfig(database=DB)
    assert WORKLOAD.fragment_sizes(cfg, (1.0, 1.0)) == [12, 12]
    sizes = WORKLOAD.fragment_sizes(cfg, (1.0,) * 7)
    with pytest.raises(UserError, match=r"sensorlog\.database\.machines"):
        WORKLOAD.check_fragments(cfg, sizes)


def test_the_csv_file_holds_every_row_with_a_header(tmp_path):
    small = DB.model_copy(update={"readings": 5})
    n = write_csv(small, tmp_path / "measures.csv")
    with open(tmp_path / "measures.csv") as f:
        rows = list(csv.reader(f))
    assert n == small.rows == len(rows) - 1
    assert rows[0] == ["m", "s", "bt", "et", "mv"]
    first = series_rows(small, 0, 0, 5)
    assert [int(rows[1][2]), float(rows[1][4])] == [int(first.bt[0]), float(first.mv[0])]


def test_sizes_become_readings_per_series():
    assert readings_for(DB, 24_000) == 1000
    assert readings_for(DB, 5) == 1


@pytest.mark.parametrize(
    ("mix", "want"),
    [("ingest50", {"INGEST": 0.5, "Q1": 0.25, "Q3": 0.25}), ("Q1", {"Q1": 1.0}),
     ({"INGEST": 3, "Q3": 1}, {"INGEST": 0.75, "Q3": 0.25})],
)  # fmt: skip
def test_mixes_resolve_to_probabilities(mix, want):
    assert resolve_mix(mix) == want


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"workload": {"mix": "mostly"}}, "unknown mix"),
        ({"workload": {"mix": {"Q2": 1}}}, "unknown mix entry"),
        ({"database": {"signal": {"low": 5, "high": 1}}}, "below high"),
        ({"study": {"sizes": []}}, "at least one"),
        ({"study": {"indexes": ["during"]}}, "before"),
    ],
)
def test_bad_settings_say_what_is_wrong(data, needle):
    with pytest.raises(ValidationError, match=needle):
        SensorLogConfig.model_validate(data)


def test_a_list_setting_takes_one_comma_separated_value():
    cfg = SensorLogConfig.model_validate(
        {"study": {"consistency": "weak", "sizes": "1000, 2000", "selectivities": 5}}
    )
    assert cfg.study.consistency == ["weak"] and cfg.study.sizes == [1000, 2000]
    assert cfg.study.selectivities == [5.0]
