"""Installable extras (issue 31): pyproject.toml's extras and bgbench/extras.py agree, the
core dependencies carry no driver and no web stack, and with every extra's modules made
unfindable (a meta-path finder in a sitecustomize of the child's own, as a venv without the
extras would be) the command line, the agent and the SQLite path import, and a store or
the deck is refused in one line naming its extra."""

import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bgbench import extras
from bgbench.errors import UserError
from bgbench.workloads import registry

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
OPTIONAL: dict[str, list[str]] = PROJECT["optional-dependencies"]
EMBEDDED = {"sqlite", "null"}  # stores that need nothing beyond bgbench itself
ALL_MODULES = sorted({m for ms in extras.EXTRA_MODULES.values() for m in ms})

BLOCKER = """
import sys

BLOCKED = set(__import__("os").environ["BGBENCH_TEST_BLOCKED"].split(","))


class Unfindable:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Unfindable())
"""


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _expanded(extra: str) -> set[str]:
    """The distributions an extra names, through the extras it includes (bgbench[...])."""
    names: set[str] = set()
    for requirement in OPTIONAL[extra]:
        included = re.fullmatch(r"bgbench\[([a-z,]+)\]", requirement)
        if included:
            for other in included.group(1).split(","):
                names |= _expanded(other)
        else:
            names.add(_name(requirement))
    return names


def test_every_extra_of_the_brief_is_declared_and_all_and_test_hold_every_one() -> None:
    stores = {"postgres", "casql", "mongodb", "cassandra", "hbase", "riak", "mysql"}
    assert stores | {"deck", "all", "test"} <= set(OPTIONAL)
    assert set(extras.EXTRA_MODULES) == stores | {"deck"}
    every = set().union(*(_expanded(e) for e in extras.EXTRA_MODULES))
    assert _expanded("all") == every
    assert every <= _expanded("test")


def test_each_extras_modules_come_from_the_distributions_it_names() -> None:
    owners = importlib.metadata.packages_distributions()
    for extra, modules in extras.EXTRA_MODULES.items():
        named = _expanded(extra)
        for module in modules:
            dists = {d.lower().replace("_", "-") for d in owners[module]}
            assert dists & named, f"{extra}: {module} comes from {dists}, not in {named}"


def test_the_core_dependencies_name_no_driver_and_no_web_stack() -> None:
    core = {_name(r) for r in PROJECT["dependencies"]}
    every = set().union(*(_expanded(e) for e in extras.EXTRA_MODULES))
    assert not core & every


def test_every_store_with_a_driver_names_its_extra() -> None:
    for workload in registry.workload_names():
        for store in registry.store_names(workload):
            assert store in EMBEDDED or store in extras.STORE_EXTRA, (workload, store)
    assert set(extras.STORE_EXTRA.values()) <= set(extras.EXTRA_MODULES)


def test_with_every_extra_installed_nothing_is_refused() -> None:
    for store in extras.STORE_EXTRA:
        assert extras.store_problem(store) == ""
    extras.require_store("cassandra")
    extras.require_extra("deck", "bgbench deck")


def _unfindable(tmp_path: Path, blocked: list[str]) -> dict[str, str]:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    return {"PYTHONPATH": str(tmp_path), "BGBENCH_TEST_BLOCKED": ",".join(blocked)}


PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
from bgbench import extras
from bgbench.errors import UserError
from bgbench.workloads import registry
for workload in registry.workload_names():
    for store in registry.store_names(workload):
        registry.spec(workload, store)  # every spec reads without its driver
    registry.binding_class(workload, "sqlite")
refusals = {}
for store in extras.STORE_EXTRA:
    try:
        extras.require_store(store)
    except UserError as exc:
        refusals[store] = str(exc)
print(json.dumps({"refusals": refusals, "sqlite": extras.store_problem("sqlite")}))
"""


@pytest.mark.slow
def test_without_any_extra_the_cli_agent_and_sqlite_path_import_and_stores_are_refused(
    tmp_path,
) -> None:
    import os

    env = {**os.environ, **_unfindable(tmp_path, ALL_MODULES)}
    modules = [
        "bgbench.__main__",
        "bgbench.coordinator.interfaces.cli",
        "bgbench.worker.agent",
        "bgbench.worker.service",
        "bgbench.worker.loadproc",
        "bgbench.results",
        "bgbench.coordinator.reports.report",
        "bgbench.coordinator.reports.compare",
        "bgbench.coordinator.execution.session",
        "bgbench.coordinator.campaign.runner",
        "bgbench.coordinator.execution.offline",
    ]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *modules],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    assert found["sqlite"] == ""
    assert set(found["refusals"]) == set(extras.STORE_EXTRA)
    for store, line in found["refusals"].items():
        extra = extras.STORE_EXTRA[store]
        assert "\n" not in line
        assert line.startswith(f"store {store} needs the '{extra}' extra")
        assert line.endswith(f"pip install 'bgbench[{extra}]'")


def test_a_refusal_names_only_what_is_missing(tmp_path) -> None:
    import os

    env = {**os.environ, **_unfindable(tmp_path, ["aiomcache"])}
    code = (
        "from bgbench import extras; "
        "print(extras.store_problem('casql')); print(extras.store_problem('postgres'))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    casql, postgres = proc.stdout.splitlines()
    assert casql == (
        "store casql needs the 'casql' extra, not installed here (missing: aiomcache): "
        "pip install 'bgbench[casql]'"
    )
    assert postgres == ""


def test_require_raises_a_user_error() -> None:
    extras.EXTRA_MODULES["_nothing"] = ("bgbench_no_such_module",)
    try:
        with pytest.raises(UserError, match=r"pip install 'bgbench\[_nothing\]'"):
            extras.require_extra("_nothing", "this")
    finally:
        del extras.EXTRA_MODULES["_nothing"]
