"""The EHR database generator: deterministic, the paper's distribution, self-contained
fragments sized by capacity, keys that never collide; and its settings."""

import numpy as np
import pytest
from pydantic import ValidationError

from bgbench.errors import UserError
from bgbench.workloads.ehr.config import EHRConfig, EHRDatabaseConfig, resolve_mix
from bgbench.workloads.ehr.generator import (
    FragmentData,
    KeyScheme,
    hash_key,
    hash_keys,
    result_counts,
)
from bgbench.workloads.ehr.workload import WORKLOAD
from bgbench.workloads.zipf import zipf_weights


def db(**fields) -> EHRDatabaseConfig:
    return EHRDatabaseConfig.model_validate({"patients": 3000, **fields})


def fragment(database: EHRDatabaseConfig, capacities=(1.0,), index=0, theta=0.27, hashed=False):
    return FragmentData(database, theta, capacities, index, hashed)


def rows(f: FragmentData) -> tuple[list, list]:
    return (
        [p for batch in f.patient_batches() for p in batch],
        [r for batch in f.result_batches() for r in batch],
    )


def test_the_same_seed_generates_the_same_database_and_another_seed_another():
    first, again = rows(fragment(db())), rows(fragment(db()))
    assert first == again
    other = rows(fragment(db(seed=2)))
    assert other[0] != first[0] and other[1] != first[1]
    assert [p.id for p in other[0]] == [p.id for p in first[0]]  # the same patients


def test_the_database_does_not_depend_on_how_it_is_cut():
    whole_patients, whole_results = rows(fragment(db()))
    parts = [rows(fragment(db(), (1.0, 1.0, 2.0), k)) for k in range(3)]
    patients = sorted((p for ps, _ in parts for p in ps), key=lambda p: p.id)
    results = sorted((r for _, rs in parts for r in rs), key=lambda r: r.id)
    assert patients == whole_patients
    assert results == sorted(whole_results, key=lambda r: r.id)


def test_result_counts_span_0_to_20_with_a_mean_of_7_on_a_large_sample():
    counts = result_counts(EHRDatabaseConfig(), np.arange(1_000_000))
    assert counts.min() == 0 and counts.max() == 20
    assert abs(counts.mean() - 7.0) < 0.05
    share = np.bincount(counts, minlength=21) / len(counts)
    assert np.all(share > 0)  # every count from 0 to 20 occurs
    assert share[0] > 0.02 and share[20] > 0.0005  # spread, not bunched at the mean


@pytest.mark.parametrize(("maxresults", "mean"), [(5, 0), (5, 5), (3, 1.5)])
def test_result_counts_honour_other_ranges(maxresults, mean):
    counts = result_counts(db(maxresults=maxresults, meanresults=mean), np.arange(100_000))
    assert counts.min() >= 0 and counts.max() <= maxresults
    assert abs(counts.mean() - mean) < 0.05


def test_a_fragment_holds_exactly_its_patients_results_as_generated():
    f = fragment(db(), (1.0, 1.0), 1)
    patients, results = rows(f)
    ids = {p.id for p in patients}
    assert ids == set(f.patients.tolist())
    assert {r.patient for r in results} <= ids
    per_patient = np.bincount([r.patient for r in results], minlength=3000)[f.patients]
    assert np.array_equal(per_patient, f.initial_counts)
    assert all(r.effective_ms < 1_735_689_600_000 for r in results)  # loaded: before 2025


@pytest.mark.parametrize("cut", ["dzipfian", "contiguous"])
@pytest.mark.parametrize("popularity", [0.27, 1.0])  # Zipfian, and uniform
def test_every_patient_is_in_exactly_one_fragment(cut, popularity):
    capacities = (1.0, 3.0, 2.0)
    database = db(fragments=cut)
    frags = [fragment(database, capacities, k, popularity) for k in range(3)]
    everyone = np.concatenate([f.patients for f in frags])
    assert len(everyone) == 3000 and np.array_equal(np.sort(everyone), np.arange(3000))


@pytest.mark.parametrize("theta", [0.27, 0.9])
def test_dzipfian_fragments_get_request_shares_by_capacity(theta):
    capacities = (1.0, 3.0, 2.0)
    weights = zipf_weights(3000, theta)
    for k, capacity in enumerate(capacities):
        mass = weights[fragment(db(), capacities, k, theta).patients].sum()
        assert mass == pytest.approx(capacity / sum(capacities), abs=0.01)


def test_contiguous_fragments_are_id_ranges_sized_by_capacity():
    capacities = (1.0, 3.0, 2.0)
    frags = [fragment(db(fragments="contiguous"), capacities, k) for k in range(3)]
    assert [f.size for f in frags] == [500, 1500, 1000]
    assert all(np.array_equal(np.diff(f.patients), np.ones(f.size - 1)) for f in frags)


def test_uniform_popularity_sizes_dzipfian_fragments_by_capacity():
    config = EHRConfig.model_validate(
        {"database": {"patients": 3000}, "workload": {"requestdistribution": "uniform"}}
    )
    assert WORKLOAD.fragment_sizes(config, (1.0, 3.0, 2.0)) == [500, 1500, 1000]


@pytest.mark.parametrize("hashed", [False, True])
def test_keys_never_collide_across_fragments_and_loaded_results(hashed):
    database = db()
    capacities = (1.0, 1.0, 2.0)
    loaded = [r.id for k in range(3) for r in rows(fragment(database, capacities, k))[1]]
    schemes = [KeyScheme(database, len(capacities), hashed) for _ in capacities]
    inserted = [[schemes[f].inserted(f, n) for n in range(5000)] for f in range(3)]
    every = loaded + [key for keys in inserted for key in keys]
    assert len(set(every)) == len(every)
    assert all(0 <= key < 1 << 63 for key in every)
    if not hashed:  # each fragment's keys increase, past every loaded key
        assert all(keys == sorted(keys) and keys[0] > max(loaded) for keys in inserted)
    else:  # and hashing scatters them
        assert inserted[0] != sorted(inserted[0])


def test_the_key_hash_is_a_bijection_that_scatters():
    seq = np.arange(1 << 20, dtype=np.int64)
    keys = hash_keys(seq)
    assert len(np.unique(keys)) == len(seq)
    assert keys.min() >= 0
    assert [hash_key(int(s)) for s in seq[:1000]] == keys[:1000].tolist()
    top = np.array([(1 << 63) - 1 - i for i in range(1000)], dtype=np.int64)
    assert len(np.unique(hash_keys(top))) == 1000 and hash_keys(top).min() >= 0
    # neighbours land far apart: a range-sharded store sees no single hot end
    assert np.median(np.abs(np.diff(keys[:10_000]))) > 1 << 50


def test_named_and_custom_mixes():
    assert resolve_mix("readwrite") == {"READ": 0.8, "WRITE": 0.2}
    assert resolve_mix("readonly") == {"READ": 1.0}
    assert resolve_mix("writeonly") == {"WRITE": 1.0}
    assert resolve_mix({"READ": 3, "WRITE": 1}) == {"READ": 0.75, "WRITE": 0.25}
    assert resolve_mix({"READ": 1, "WRITE": 0}) == {"READ": 1.0}


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ({"workload": {"mix": "mostlyreads"}}, "unknown mix 'mostlyreads'"),
        ({"workload": {"mix": {"READ": 1, "DELETE": 1}}}, "DELETE"),
        ({"workload": {"mix": {"READ": 0}}}, "sum to 0"),
        ({"database": {"meanresults": 30}}, "meanresults"),
        ({"database": {"patients": 0}}, "greater than or equal to 1"),
        ({"workload": {"zipfianmean": float("inf")}}, "finite"),
        ({"workload": {"colour": "red"}}, "Extra inputs"),
    ],
)
def test_bad_settings_are_refused_with_the_reason(section, needle):
    with pytest.raises(ValidationError, match=needle):
        EHRConfig.model_validate(section)


def test_an_empty_fragment_is_refused_before_anything_starts():
    config = EHRConfig.model_validate({"database": {"patients": 2}})
    with pytest.raises(UserError, match=r"ehr\.database\.patients"):
        WORKLOAD.check_fragments(config, WORKLOAD.fragment_sizes(config, (1.0, 1.0, 1.0)))
