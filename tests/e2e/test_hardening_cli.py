"""The command line under a careless user and flaky infrastructure (issue 24): results
that cannot be written are refused before anything runs, a write that fails at the end
is one line and exit 3 with nothing recorded before lost, outputs that are not regular
files are refused at once, and Ctrl-C at any moment from the start is exit 130."""

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import psutil
import pytest

from bgbench.coordinator.storage.results import ResultsStore
from tests import helpers
from tests.e2e.live_helpers import wait_for
from tests.helpers import BGBENCH

MODEL_RUN = ["run", "--store", "model", "--threads", "4"]


bgbench = partial(helpers.bgbench, timeout=180)


def one_line(proc: subprocess.CompletedProcess[str], code: int) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("bgbench:")]
    return line


def recorded_ids(results: Path) -> list[str]:
    proc = bgbench("results", "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    return [line.split()[1] for line in proc.stdout.splitlines() if "│ 2" in line]


# -- the results directory, checked before the run -------------------------------------


@pytest.mark.parametrize("where", ["/proc/1/nope", "/proc/self"])
def test_run_refuses_results_it_cannot_write_before_it_starts(tmp_path, where):
    events = tmp_path / "events.jsonl"
    proc = bgbench(*MODEL_RUN, "--duration", "1", "--results", where, "--events", str(events))
    line = one_line(proc, 2)
    assert where in line and "cannot be" in line, line
    assert "experiment_start" not in events.read_text()  # refused before it started


def test_run_refuses_a_full_results_directory_before_it_starts(tmp_path):
    events = tmp_path / "events.jsonl"
    events.touch()
    proc = bgbench(
        *MODEL_RUN, "--duration", "1", "--results", str(tmp_path / "res"),
        "--events", str(events), limit_file_bytes=2048,
    )  # fmt: skip
    assert "cannot be" in one_line(proc, 2)
    assert events.read_text() == ""  # refused before it started


def test_a_store_that_fills_up_at_the_end_is_one_line_and_loses_nothing(tmp_path):
    results = tmp_path / "res"
    first = bgbench(*MODEL_RUN, "--duration", "1", "--results", str(results), "--json")
    assert first.returncode == 0, first.stderr
    (before,) = recorded_ids(results)
    store = results / "bgbench.sqlite"
    size = store.stat().st_size  # the next record cannot grow it
    proc = bgbench(
        *MODEL_RUN, "--duration", "1", "--results", str(results), "--json",
        limit_file_bytes=size,
    )  # fmt: skip
    line = one_line(proc, 3)
    result = json.loads(proc.stdout)  # its figures are still shown
    assert f"run {result['experiment_id']} could not be recorded in {store}" in line, line
    saved = results / result["experiment_id"] / f"{result['experiment_id']}.json"
    assert json.loads(saved.read_text())["experiment_id"] == result["experiment_id"]
    ratings = {r["id"]: r["status"] for r in ResultsStore.existing(results).ratings()}
    assert ratings.pop(before) == "done"  # the store is whole, what it held is there
    assert set(ratings.values()) <= {"failed"}  # the new one, if at all, never as done


def test_a_store_that_fills_up_during_a_rating_is_one_line_and_exit_3(tmp_path):
    results = tmp_path / "res"
    first = bgbench(*MODEL_RUN, "--duration", "1", "--results", str(results), "--json")
    assert first.returncode == 0, first.stderr
    (before,) = recorded_ids(results)
    size = (results / "bgbench.sqlite").stat().st_size  # a rating's records cannot grow it
    proc = bgbench(
        "rate", "--store", "model", "--delta-search", "2", "--delta", "4", "--results",
        str(results), limit_file_bytes=size,
    )  # fmt: skip
    line = one_line(proc, 3)
    assert line.startswith("bgbench: fault: results store") and str(results) in line, line
    ratings = {r["id"]: r["status"] for r in ResultsStore.existing(results).ratings()}
    assert ratings.pop(before) == "done"  # what the store held is there
    assert set(ratings.values()) <= {"failed", "running"}  # the rating, never as done


def test_rate_refuses_results_it_cannot_write_the_same_way(tmp_path):
    proc = bgbench("rate", "--store", "model", "--results", "/proc/self")
    line = one_line(proc, 2)
    assert "/proc/self" in line and "cannot be" in line, line


# -- outputs that are not regular files --------------------------------------------------


def test_events_to_a_device_is_refused_at_start(tmp_path):
    proc = bgbench(*MODEL_RUN, "--duration", "1", "--results", str(tmp_path), "--events",
                   "/dev/full")  # fmt: skip
    assert "--events /dev/full is a character device" in one_line(proc, 2)
    assert not list(tmp_path.iterdir())  # nothing ran


def test_events_to_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "events.fifo"
    os.mkfifo(fifo)
    proc = bgbench(*MODEL_RUN, "--duration", "1", "--results", str(tmp_path / "res"),
                   "--events", str(fifo), timeout=120)  # fmt: skip
    assert f"--events {fifo} is a FIFO" in one_line(proc, 2)


def test_an_events_file_that_stops_taking_lines_is_one_line_and_the_run_goes_on(tmp_path):
    events = tmp_path / "events.jsonl"
    limit = 1 << 20
    events.write_text(" " * (limit - 10) + "\n")  # room for no more events
    results = tmp_path / "res"
    proc = bgbench(*MODEL_RUN, "--duration", "1", "--results", str(results), "--json",
                   "--events", str(events), limit_file_bytes=limit)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "--events" in line]
    assert len(warnings) == 1 and "cannot write it" in warnings[0], proc.stderr
    assert recorded_ids(results) == [json.loads(proc.stdout)["experiment_id"]]


@pytest.fixture(scope="module")
def a_recorded_run(tmp_path_factory) -> tuple[Path, str]:
    results = tmp_path_factory.mktemp("recorded")
    proc = bgbench(*MODEL_RUN, "--duration", "1", "--results", str(results), "--json")
    assert proc.returncode == 0, proc.stderr
    return results, json.loads(proc.stdout)["experiment_id"]


@pytest.mark.parametrize("kind", ["device", "fifo"])
@pytest.mark.parametrize("command", ["report", "compare", "export"])
def test_report_compare_and_export_refuse_outputs_that_are_not_files(
    tmp_path, a_recorded_run, command, kind
):
    results, run_id = a_recorded_run
    target = Path("/dev/full") if kind == "device" else tmp_path / "out.fifo"
    if kind == "fifo":
        os.mkfifo(target)
    args = {
        "report": ["report", run_id],
        "compare": ["compare", run_id, run_id],
        "export": ["results", "export", run_id],
    }[command]
    proc = bgbench(*args, "--results", str(results), "-o", str(target), timeout=120)
    assert f"--output {target} is a" in one_line(proc, 2)


# -- Ctrl-C from the first instant ---------------------------------------------------------


def mapped(pid: int, name: str) -> bool:
    """Whether the process has loaded a shared object whose path holds `name` (how far
    its imports have come)."""
    try:
        return name in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def loaded_while_starting() -> list[str]:
    """Extension modules bgbench loads while importing its command line, earliest first
    (_json only where it is a shared object, not built in)."""
    import _json

    first = ["lib-dynload/_json"] if getattr(_json, "__file__", None) else []
    # No pandas, no scipy (a run that needs it loads it after its start).
    return [*first, "_pydantic_core", "_multiarray_umath", "cygrpc"]


def started(events: Path) -> Callable[[int], bool]:
    return lambda _pid: events.exists() and "experiment_start" in events.read_text()


def interrupt_when(
    condition: Callable[[int], bool], args: list[str], command: list[str] = BGBENCH
) -> tuple[int, str]:
    """Start `bgbench ARGS`, send SIGINT once `condition(pid)` holds; its exit code and
    stderr, after checking nothing it started outlives it."""
    proc = subprocess.Popen(
        [*command, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    children: set[psutil.Process] = set()
    try:

        def ready() -> bool:
            with contextlib.suppress(psutil.Error):
                children.update(psutil.Process(proc.pid).children(recursive=True))
            return proc.poll() is not None or condition(proc.pid)

        wait_for(ready, "the point to interrupt at", 120)
        assert proc.poll() is None, "bgbench ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
        _gone, alive = psutil.wait_procs(list(children), timeout=30)
        assert not alive, alive
        return proc.returncode, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()


@pytest.mark.parametrize("marker", loaded_while_starting())
def test_ctrl_c_while_it_starts_exits_130_with_one_line(tmp_path, marker):
    args = [*MODEL_RUN, "--duration", "60", "--results", str(tmp_path)]
    code, err = interrupt_when(lambda pid: mapped(pid, marker), args)
    assert code == 130, (code, err)
    assert err.strip() == "bgbench: interrupted", err


def test_ctrl_c_as_soon_as_the_run_started_exits_130(tmp_path):
    events = tmp_path / "events.jsonl"
    args = [
        "run", "--store", "sqlite", "--agents", "1", "--users", "300", "--threads", "2",
        "--duration", "120", "--results", str(tmp_path / "res"), "--events", str(events),
        "-p", f"store.options.path={tmp_path / 'bg.sqlite'}",
    ]  # fmt: skip
    code, err = interrupt_when(started(events), args)
    assert code == 130 and "Traceback" not in err, (code, err)
    assert err.strip().splitlines()[-1] == "bgbench: interrupted", err


def test_ctrl_c_as_its_agents_start_exits_130_and_leaves_none(tmp_path):
    args = [
        "run", "--store", "sqlite", "--users", "300", "--threads", "2", "--duration", "60",
        "--results", str(tmp_path / "res"), "-p", f"store.options.path={tmp_path / 'bg.sqlite'}",
    ]  # fmt: skip

    def has_children(pid: int) -> bool:
        with contextlib.suppress(psutil.Error):
            return bool(psutil.Process(pid).children())
        return False

    code, err = interrupt_when(has_children, args)
    assert code == 130 and "Traceback" not in err, (code, err)
    assert err.strip().splitlines()[-1] == "bgbench: interrupted", err


def test_ctrl_c_while_the_installed_script_starts_exits_130(tmp_path):
    """The `bgbench` script pip installed enters where an interrupt is handled at once."""
    script = str(Path(sys.executable).parent / "bgbench")
    args = [*MODEL_RUN, "--duration", "60", "--results", str(tmp_path)]
    code, err = interrupt_when(lambda pid: mapped(pid, "_pydantic_core"), args, [script])
    assert code == 130, (code, err)
    assert err.strip() == "bgbench: interrupted", err
