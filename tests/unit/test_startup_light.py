"""Start-up stays light (issue 30): the command line's module and the agent's load only
what serving needs; statistics, DataFrames, plots, the out-of-core validator, the web
stack, numpy and the load engine come with the commands and calls that use them."""

import json
import subprocess
import sys

HEAVY = ("scipy", "pandas", "matplotlib", "duckdb", "pyarrow", "fastapi", "uvicorn", "httpx")

PROBE = """
import importlib, json, sys
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
print(json.dumps(sorted(sys.modules)))
"""


def loaded_by(*modules: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout))


def top_level(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_the_command_line_module_loads_no_heavy_library_nor_the_coordinator() -> None:
    loaded = loaded_by("bgbench.coordinator.interfaces.cli")
    assert "typer" in loaded  # the probe imported the command line
    assert not top_level(loaded) & {*HEAVY, "numpy", "grpc", "pydantic"}
    coordinator = {m for m in loaded if m.startswith("bgbench.coordinator.")}
    assert coordinator <= {m for m in coordinator if m.startswith("bgbench.coordinator.interfaces")}


def test_the_agent_module_loads_no_heavy_library_nor_the_load_engine() -> None:
    loaded = loaded_by("bgbench.worker.agent")
    assert "bgbench.worker.service" in loaded and "grpc" in loaded
    assert not top_level(loaded) & {*HEAVY, "numpy"}
    assert not loaded & {"bgbench.worker.loadproc", "bgbench.worker.engine", "bgbench.sdk"}
