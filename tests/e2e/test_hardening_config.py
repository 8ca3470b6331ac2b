"""Settings files, `-p` values and campaign files as hostile input, through the CLI (and the
deck's /api/validate): special files, YAML aliases nested into a "billion laughs", recursive
aliases, a foreach of 10^8 jobs, expressions that raise or exhaust memory, numbers past
Python's digit limit, and jobs `campaign run` would fail. Each is refused at once with one
line and exit 2. The timeout of each command is a guard against the old hang, not a wait."""

import os
import subprocess
from functools import partial
from pathlib import Path

import pytest

from tests import helpers
from tests.e2e.test_deck import post

GUARD_S = 180  # far above what a refusal takes on a loaded machine; the old code ran past it


bgbench = partial(helpers.bgbench, timeout=GUARD_S)


def refused(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    """The one line a refusal printed, after checking exit 2 and that it names `words`."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def laughs(indent: str, levels: int = 8, width: int = 10) -> str:
    """YAML lines of `levels` anchors, each a list of `width` aliases of the one before."""
    lines = [f"{indent}a0: &a0 [{', '.join(['x'] * width)}]"]
    for i in range(1, levels + 1):
        lines.append(f"{indent}a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


# -- special files (item 7) -------------------------------------------------------------


@pytest.mark.parametrize("command", [["check-config"], ["campaign", "check"]])
def test_a_fifo_as_the_file_is_refused_not_read(tmp_path, command):
    fifo = tmp_path / "settings.yaml"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    refused(bgbench(*command, str(fifo)), str(fifo), "FIFO")


def test_a_fifo_as_rate_settings_is_refused_before_anything_runs(tmp_path):
    fifo = tmp_path / "settings.toml"
    os.mkfifo(fifo)
    refused(bgbench("rate", "-c", str(fifo), "--results", str(tmp_path / "res")), "FIFO")
    assert not (tmp_path / "res").exists()


def test_dev_zero_as_the_settings_file_is_refused_not_read_until_memory_runs_out():
    refused(bgbench("check-config", "/dev/zero"), "/dev/zero", "character device")


def test_a_settings_file_over_16_mib_is_refused(tmp_path):
    big = write(tmp_path, "big.toml", "# " + "x" * (16 * 1024 * 1024) + "\n")
    refused(bgbench("check-config", str(big)), "larger than 16,777,216 bytes")


# -- YAML aliases and nesting (item 8) ----------------------------------------------------


def test_nested_aliases_in_store_options_are_refused_by_check_config(tmp_path):
    path = write(tmp_path, "s.yaml", "store:\n  name: sqlite\n  options:\n" + laughs("    "))
    proc = bgbench("check-config", str(path))
    refused(proc, str(path), "line 8", "100,000 values", "aliases")
    assert "valid" not in proc.stdout  # it printed "valid", then ran past 40 s


def test_nested_aliases_in_a_campaign_are_refused(tmp_path):
    text = "jobs:\n  - store:\n      name: sqlite\n      options:\n" + laughs("        ")
    path = write(tmp_path, "c.yaml", text)
    refused(bgbench("campaign", "check", str(path)), str(path), "100,000 values")


SELF = "store:\n  name: sqlite\n  options: &o\n    me: *o\n"


@pytest.mark.parametrize("command", [["check-config"], ["run", "-c"]])
def test_a_recursive_alias_is_refused_by_name(tmp_path, command):
    path = write(tmp_path, "s.yaml", SELF)
    extra = ["--results", str(tmp_path / "res")] if command[0] == "run" else []
    refused(bgbench(*command, str(path), *extra), str(path), "*o", "recursive alias", "line 4")


def test_a_recursive_alias_in_a_campaign_is_refused_by_name(tmp_path):
    path = write(tmp_path, "c.yaml", "jobs:\n  - " + SELF.replace("\n", "\n    ").rstrip() + "\n")
    refused(bgbench("campaign", "check", str(path)), "*o", "recursive alias")


def test_nesting_past_the_bound_is_refused_in_yaml_and_toml(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    yaml_file = write(tmp_path, "d.yaml", f"store:\n  options: {{a: {deep}}}\n")
    refused(bgbench("check-config", str(yaml_file)), "nested deeper than 64 levels")
    toml_file = write(tmp_path, "d.toml", f"[store.options]\na = {deep}\n")
    refused(bgbench("check-config", str(toml_file)), "nested deeper than 64 levels")


def test_a_foreach_of_ten_to_the_eight_jobs_is_refused_before_any_is_built(tmp_path):
    lists = "".join(f"      v{i}: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n" for i in range(8))
    path = write(tmp_path, "c.yaml", "jobs:\n  - foreach:\n" + lists)
    refused(bgbench("campaign", "check", str(path)), f"{path}:2", "100,000,000 jobs", "10,000")


def test_the_deck_validates_nested_aliases_without_an_error_500(deck):
    text = "jobs:\n  - store:\n      name: sqlite\n      options:\n" + laughs("        ")
    status, body = post(deck.url + "/api/validate", {"name": "c.yaml", "text": text,
                                                     "kind": "campaign"}, deck.own)  # fmt: skip
    assert status == 200, body
    assert "100,000 values" in str(body)
    settings = "store:\n  name: sqlite\n  options:\n" + laughs("    ")
    status, body = post(deck.url + "/api/validate", {"name": "s.yaml", "text": settings}, deck.own)
    assert status == 200, body
    assert "100,000 values" in str(body)


# -- expressions and numbers (item 14) ----------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("[1][5]", "list index out of range"),
        ("'abc'[10]", "string index out of range"),
        ("-" * 20_000 + "1", "longer than 1,000 characters"),
        ("-" * 900 + "1", "nested deeper than 32 levels"),
        ("2 ** 100000", "4096 bits"),
        ("[[0] * 100] * 1000", "10,000 items"),
        ("'%0999999999d' % 1", "% formatting"),
        ("(-1) ** 0.5", "complex"),
    ],
)
def test_a_hostile_expression_is_one_line_naming_file_job_and_expression(
    tmp_path, expression, reason
):
    path = write(tmp_path, "c.yaml", f'jobs:\n  - rating: {{t0: "${{= {expression}}}"}}\n')
    refused(bgbench("campaign", "check", str(path)), f"{path}:2", "job 1", "rating.t0", reason)


def test_a_5000_digit_integer_in_a_campaign_is_refused_with_its_line(tmp_path):
    path = write(tmp_path, "c.yaml", "jobs:\n  - run: {seed: " + "1" * 5000 + "}\n")
    refused(bgbench("campaign", "check", str(path)), str(path), "line 2", "4,300 digits")


def test_a_5000_digit_integer_in_settings_is_refused(tmp_path):
    path = write(tmp_path, "s.yaml", "run:\n  seed: " + "1" * 5000 + "\n")
    refused(bgbench("check-config", str(path)), str(path), "4,300 digits")


def test_a_parameter_nested_5000_deep_is_refused(tmp_path):
    path = write(tmp_path, "s.toml", "")
    deep = "[" * 5000 + "]" * 5000
    refused(bgbench("check-config", str(path), "-p", f"store.options.a={deep}"),
            "parameter store.options.a", "nested deeper")  # fmt: skip
    digits = "1" * 5000
    refused(bgbench("check-config", str(path), "-p", f"run.seed={digits}"),
            "parameter run.seed", "4,300 digits")  # fmt: skip


# -- jobs campaign run would fail (items 11, "figures shown wrong") -------------------------


def test_campaign_check_refuses_what_rate_refuses_and_run_runs_nothing(tmp_path):
    path = write(tmp_path, "c.yaml", (
        "jobs:\n"
        "  - store: {name: sqlite, options: {nope: 1}}\n"
        "  - server: {kind: oracle}\n"
    ))  # fmt: skip
    proc = bgbench("campaign", "check", str(path))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = proc.stderr.strip().splitlines()
    assert errors[0].startswith("job 1: store 'sqlite': store.options.nope"), errors
    assert f"(set at {path}:2)" in errors[0]
    assert errors[1].startswith("job 2: unknown server kind 'oracle': use one of postgres"), errors
    assert f"(set at {path}:3)" in errors[1]
    assert "2 of 2 jobs are invalid" in errors[-1]
    results = tmp_path / "res"
    run = bgbench("campaign", "run", str(path), "--results", str(results))
    assert run.returncode == 2, run.stderr
    assert "store.options.nope" in run.stderr
    assert not (results / "bgbench.sqlite").exists()  # no campaign was started
