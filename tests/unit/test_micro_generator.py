"""The Micro database as generated: group keys, values independent of the fragmenting,
fragments that partition users and shared groups, and the settings the mix needs."""

import numpy as np
import pytest
from pydantic import ValidationError

from bgbench.errors import UserError
from bgbench.workloads.micro.config import MAX_ITEMS, MicroConfig, MicroDatabaseConfig
from bgbench.workloads.micro.generator import FragmentData, GroupKeys, item_values
from bgbench.workloads.micro.workload import WORKLOAD

DB = MicroDatabaseConfig(users=300, shared_groups=7, personal_items=5, shared_items=9,
                         public_items=3, seed=11)  # fmt: skip


def test_group_keys_of_every_kind_are_distinct():
    keys = GroupKeys(DB.users)
    users = range(DB.users)
    every = [
        *map(keys.personal, users),
        *map(keys.public, users),
        *map(keys.inbox, users),
        *map(keys.shared, range(DB.shared_groups)),
    ]
    assert len(set(every)) == len(every) == 3 * DB.users + DB.shared_groups


@pytest.mark.parametrize("capacities", [[1.0], [1.0, 1.0, 2.0], [3.0, 1.0]])
def test_fragments_partition_users_and_shared_groups(capacities):
    parts = [FragmentData(DB, 0.27, capacities, k) for k in range(len(capacities))]
    users = np.concatenate([p.users for p in parts])
    shared = np.concatenate([p.shared for p in parts])
    assert sorted(users.tolist()) == list(range(DB.users))
    assert sorted(shared.tolist()) == list(range(DB.shared_groups))
    config = MicroConfig.model_validate(
        {"database": DB.model_dump(), "workload": {"mix": "READ_PERSONAL",
                                                   "requestdistribution": "zipfian"}}
    )  # fmt: skip
    assert config.workload.theta == 0.27
    assert WORKLOAD.fragment_sizes(config, capacities) == [p.size for p in parts]


def test_values_do_not_depend_on_the_fragmenting_and_totals_are_the_sums():
    whole = FragmentData(DB, 0.27, [1.0], 0)
    ids, values, groups, totals = whole.initial_items()
    assert len(ids) == DB.users * (5 + 3) + DB.shared_groups * 9
    assert np.all(np.diff(ids) > 0) and np.all(np.diff(groups) > 0)
    assert values.min() >= 0 and values.max() < 1000 and len(set(values.tolist())) > 100
    by_group = {g: int(t) for g, t in zip(groups.tolist(), totals.tolist(), strict=True)}
    split = [FragmentData(DB, 0.27, [1.0, 2.0], k) for k in range(2)]
    for part in split:
        for batch in part.group_batches():
            for rows in batch:
                assert sum(rows.values) == by_group.get(rows.group, 0)
                if rows.values:
                    at = np.searchsorted(ids, rows.group * MAX_ITEMS)
                    assert values[at : at + len(rows.values)].tolist() == rows.values
    assert item_values(11, 5, 4).tolist() == item_values(11, 5, 6)[:4].tolist()
    assert item_values(11, 5, 4).tolist() != item_values(12, 5, 4).tolist()  # the seed


def test_every_group_of_a_fragment_is_loaded_once():
    part = FragmentData(DB, 1.0, [1.0, 1.0], 1)
    loaded = [rows.group for batch in part.group_batches() for rows in batch]
    assert sorted(loaded) == part.group_keys() and len(set(loaded)) == len(loaded)


@pytest.mark.parametrize(
    ("settings", "needle"),
    [
        ({"workload": {"mix": "conflict", "items_per_txn": 50}}, "shared_items"),
        ({"workload": {"mix": "scalability"}, "database": {"personal_items": 2}}, "personal"),
        ({"workload": {"mix": "READ_SHARED"}, "database": {"shared_groups": 0}}, "shared_groups"),
        ({"workload": {"mix": "bidding"}}, "unknown mix"),
        ({"workload": {"retry": {"attempts": 0}}}, "attempts"),
    ],
)
def test_settings_the_mix_cannot_use_are_refused(settings, needle):
    with pytest.raises(ValidationError, match=needle):
        MicroConfig.model_validate(settings)


def test_fragments_too_small_for_the_mix_are_refused():
    config = MicroConfig.model_validate(
        {"database": {"users": 6, "shared_groups": 2}, "workload": {"mix": "readwrite"}}
    )
    WORKLOAD.check_fragments(config, [3, 3])
    with pytest.raises(UserError, match="shared_groups"):
        WORKLOAD.check_fragments(config, [2, 2, 2])
    with pytest.raises(UserError, match="users"):
        WORKLOAD.check_fragments(config, [1, 5])  # a message needs another user
