"""The wheel holds every package (issue 31): pyproject.toml lists the packages by hand
(the folders install under `bgbench.`), and a package left off that list is missing from
an installed wheel while an editable install, which the other tests use, still finds it
(bgbench.coordinator.scenario was, until a clean venv's rating failed on it)."""

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def _packages_on_disk() -> set[str]:
    found: set[str] = set()
    for name, folder in SETUPTOOLS["package-dir"].items():
        for init in (REPO / folder).rglob("__init__.py"):
            if ".venv" in init.parts:
                continue
            parts = init.parent.relative_to(REPO / folder).parts
            found.add(".".join([name, *parts]))
    return found


def test_every_package_on_disk_is_listed_and_every_listed_one_exists() -> None:
    listed = set(SETUPTOOLS["packages"])
    on_disk = _packages_on_disk()
    assert "bgbench.coordinator.scenario" in on_disk  # the walk sees nested packages
    assert on_disk - listed == set()
    assert listed - on_disk == set()
