"""Every experiment id the coordinator makes is one an agent accepts; nothing else is."""

from pathlib import Path

import pytest

from bgbench.coordinator.execution.experiment import new_experiment_id
from bgbench.coordinator.interfaces.cli import new_rating_id
from bgbench.errors import UserError
from bgbench.worker.security import experiment_dir


def coordinator_ids() -> list[str]:
    rating = new_rating_id()
    ids = [new_experiment_id(8), new_experiment_id(16384)]
    for duration in (2.0, 2.5, 600.0, 1e6):
        ids.append(f"{rating}-T8-{duration:g}s")  # rating.py's search experiments
    ids.append(f"{rating}-warmup0-T8")  # and its warm-up
    return ids + [f"{i}-retry{n}" for i in ids for n in (1, 2)]  # session.py's retries


IDS = coordinator_ids()


# Test ids by position: the values hold the time, and pytest-xdist's workers must collect
# the same tests.
@pytest.mark.parametrize("experiment_id", IDS, ids=[f"id{n}" for n in range(len(IDS))])
def test_the_coordinators_ids_are_accepted(tmp_path, experiment_id):
    assert experiment_dir(tmp_path, experiment_id) == (
        tmp_path.resolve() / "experiments" / experiment_id
    )


@pytest.mark.parametrize(
    "experiment_id",
    ["", ".", "..", "../x", "../../x", "a/../../x", "x/y", "/tmp/x", "-x", ".x", "a..b",
     "x\x00", "x y", "x" * 129, "é"],
)  # fmt: skip
def test_anything_but_a_plain_name_is_refused(tmp_path, experiment_id):
    with pytest.raises(UserError, match="experiment_id"):
        experiment_dir(tmp_path, experiment_id)


def test_a_symlink_out_of_the_experiments_dir_is_refused(tmp_path):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "link").symlink_to(tmp_path.parent)
    with pytest.raises(UserError, match="leads outside"):
        experiment_dir(tmp_path, "link")
    assert experiment_dir(Path(tmp_path), "fine").name == "fine"
