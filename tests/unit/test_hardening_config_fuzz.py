"""Fuzzing the settings reader (TOML and YAML files, `-p` values), the campaign reader and
its expressions: whatever the text, the only thing that may come out is a result or a
UserError (ExpressionError for an expression alone); never another exception, never a hang.
Texts are built from fragments that reach the parsers' corners (anchors and aliases, tags,
nesting, huge numbers, dates, references), not only random characters. Bounded in time:
a few hundred examples each, and an alarm that fails an example running past HANG_S."""

import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bgbench.coordinator.campaign import load_campaign
from bgbench.coordinator.campaign.expressions import ExpressionError, evaluate
from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.errors import UserError

HANG_S = 30  # a guard far above one example's time: the old readers ran for minutes
FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

YAML_BITS = [
    "store:", "run:", "jobs:", "templates:", "foreach:", "extends:", "include:", "params:",
    "server:", "name: sqlite", "options:", "seed: ", "threadcount: ", "kind: oracle",
    "\n", "\n  ", "\n    ", "  ", "- ", "? ", ": ", ", ", "[", "]", "{", "}", "'", '"',
    "&a ", "*a", "&b ", "*b", "[*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]", "<<: ", "!!binary ",
    "!!set ", "!!omap ", "!!python/object:os.system ", "!!str ", "!!int ", "2001-13-01",
    "2001-01-01 10:00:00", "1" * 5000, "0x1f", "0o17", "1e999", ".nan", "-.inf", "~", "null",
    "yes", "on", "#", "|", ">", "---\n", "...\n", "%YAML 1.1\n", "${x}", "${= [1][5]}",
    "${= 'abc'[10]}", "${store.options}", "\t", "\x00", "é", "\ufeff",
]  # fmt: skip
TOML_BITS = [
    "[run]", "[store]", "[store.options]", "[[x]]", "[bg.database]", "seed", "name",
    "usercount", " = ", "=", "\n", ".", "[", "]", "{", "}", ", ", '"', "'", '"""', "'''",
    "1", "1_000", "1" * 5000, "0x1f", "1e999", "inf", "nan", "-0", "true", "1979-05-27",
    "1979-05-27T07:32:00Z", "07:32:00", '"sqlite"', "[[[[[[[[[[", "]]]]]]]]]]", "#", "\\u0000",
    "\x00", "é",
]  # fmt: skip
PARAM_BITS = [
    "run.seed", "store.options.a", "threadcount", "usercount", "workload.name", "workload.scale",
    "store", "store.name", "=", "[", "]", "{", "}", '"', ":", ",", "1", "-1", "1e400",
    "1" * 5000, "[" * 3000, "]" * 3000, "null", "true", "NaN", "Infinity", "sqlite", ".", "",
]  # fmt: skip
EXPRESSION_BITS = [
    "[", "]", "(", ")", "{", "}", "1", "0", "-1", "10", "99999", "1e308", "0.5", "'abc'",
    "[1]", "[0] * 100", "-", "+", "*", "**", "/", "//", "%", "<<", ">>", "&", "|", "^", "~",
    "==", "<", "not ", " and ", " or ", " if ", " else ", " in ", ":", ",", ".", "min",
    "max", "round", "int", "float", "str", "len", "abs", "x", "bg", ".database",
    ".usercount", ".upper", "__class__", "lambda a: a", "f'{1}'", "b'x'", "...", "[x for x in [1]]",
]  # fmt: skip


def texts(bits: list[str], size: int = 60) -> st.SearchStrategy[str]:
    pieces = st.one_of(st.sampled_from(bits), st.text(max_size=4))
    return st.lists(pieces, max_size=size).map("".join)


@contextmanager
def no_hang() -> Iterator[None]:
    """Fail the example if it runs past HANG_S (a guard, not a wait)."""

    def hung(signum: int, frame: object) -> None:
        raise AssertionError(f"still running after {HANG_S} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def read_settings(text: str, suffix: str, params: list[str] | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"settings{suffix}"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        with no_hang():
            try:
                load_settings(path, [parse_override(p) for p in params or []])
            except UserError as exc:
                assert str(exc) and "\n" not in str(exc)


@FUZZ
@given(texts(YAML_BITS))
@example("!!int ")
@example("!!float ")
@example("!!bool ")
def test_any_yaml_settings_text_is_read_or_refused_with_a_user_error(text):
    read_settings(text, ".yaml")


@FUZZ
@given(texts(TOML_BITS))
def test_any_toml_settings_text_is_read_or_refused_with_a_user_error(text):
    read_settings(text, ".toml")


@FUZZ
@given(st.lists(texts(PARAM_BITS, 12), min_size=1, max_size=4))
@example(["run.seed\n0=" + "1" * 5000])
def test_any_parameter_is_read_or_refused_with_a_user_error(params):
    with no_hang():
        try:
            load_settings(None, [parse_override(p) for p in params])
        except UserError as exc:
            assert str(exc) and "\n" not in str(exc)


@FUZZ
@given(texts(YAML_BITS, 80))
def test_any_campaign_text_is_read_or_refused_with_a_user_error(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "campaign.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        with no_hang():
            try:
                campaign = load_campaign(path, check=False)
            except UserError as exc:
                assert str(exc) and "\n" not in str(exc)
                return
        assert all("\n" not in job.error for job in campaign.jobs)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts(EXPRESSION_BITS, 40))
@pytest.mark.slow
def test_any_expression_is_a_value_or_an_expression_error(text):
    names = {"x": [1, 2, 3], "bg": {"database": {"usercount": 1000}}}
    with no_hang():
        try:
            evaluate(text, names)
        except ExpressionError as exc:
            assert "\n" not in str(exc)
