"""The generic layers know no workload by name (docs/architecture.md, "Layers")."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERIC = ("worker", "coordinator", "protos", "validation")
NAMED = re.compile(r"workloads[./]bg\b|workloads\.kv|kvworkload")


def test_no_generic_module_imports_or_names_a_workload():
    offenders = []
    for layer in GENERIC:
        for path in sorted((ROOT / layer).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if NAMED.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


def test_the_check_itself_finds_a_workload_import(tmp_path):
    assert NAMED.search("from bgbench.workloads.bg.actions import Action")
    assert NAMED.search('"bgbench.workloads.bg.check_options"')
    assert not NAMED.search("from bgbench.workloads.api import Workload")
