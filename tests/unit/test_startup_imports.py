"""Start-up stays light: `bgbench run`, `bgbench rate` and `bgbench agent` import no
DataFrame, plotting or web library, and `bgbench agent` never goes through the
coordinator's command line."""

import json
import subprocess
import sys

HEAVY = ("pandas", "matplotlib", "fastapi", "starlette", "uvicorn", "sse_starlette")

# Imports what a command imports before it runs (its --help ends the process there), then
# prints the top-level packages loaded.
PROBE = """
import json, sys
sys.argv = ["bgbench", *json.loads(sys.argv[1])]
from bgbench.__main__ import main
try:
    main()
except SystemExit:
    pass
loaded = sorted({name.split(".")[0] for name in sys.modules} | {
    name for name in sys.modules if name.startswith("bgbench.")})
print(json.dumps(loaded), file=sys.stderr)
"""


def loaded_modules(*args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([*args, "--help"])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


def test_run_and_rate_import_no_dataframe_plotting_or_web_library() -> None:
    for command in ("run", "rate"):
        loaded = loaded_modules(command)
        assert "bgbench.coordinator.interfaces.cli" in loaded  # the probe reached the command
        assert not loaded & set(HEAVY), (command, sorted(loaded & set(HEAVY)))


def test_agent_goes_straight_to_the_worker() -> None:
    loaded = loaded_modules("agent")
    assert "bgbench.worker.agent" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert not {m for m in loaded if m.startswith("bgbench.coordinator")}


def test_the_agent_module_alone_imports_none_of_them() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bgbench.worker.agent", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    assert "bgbench.worker.agent" in imported or "bgbench.worker.loadproc" in imported
    assert not {m.split(".")[0] for m in imported} & set(HEAVY)
    assert not {m for m in imported if m.startswith("bgbench.coordinator")}


def test_the_light_modules_exit_codes_match_the_recorded_ones() -> None:
    """The entry and the command line name exit 130 without importing the fault records."""
    from bgbench.__main__ import FAULT, INTERRUPTED, USER_ERROR
    from bgbench.coordinator.interfaces.cli import INTERRUPTED_EXIT
    from bgbench.coordinator.records import faults

    assert INTERRUPTED == INTERRUPTED_EXIT == faults.EXIT_INTERRUPTED
    assert (USER_ERROR, FAULT) == (faults.EXIT_USER, faults.EXIT_FAULT)
