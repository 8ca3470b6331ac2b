"""When the engine calls a store failing: 100 errors in a row, or errors and nothing else
for 30 s (a store whose every call times out after 5 s would take over 8 minutes to reach
the count; a CI run waited 240 s on one). Timers fed by hand: the judgement is pure."""

from time import monotonic_ns

from bgbench.sdk import Timer
from bgbench.validation.logformat import LogWriter
from bgbench.worker.measurement import Recorder
from bgbench.worker.plan import MAX_CONSECUTIVE_ERRORS, MAX_FAILING_NS, failing, gave_up


def timer(tmp_path) -> Timer[None]:
    return Timer(None, Recorder(LogWriter(tmp_path / "t.bglog")), 0)


def fail(t: Timer[None], start: int) -> None:
    t.failed(1, start, start, 0, TimeoutError("memcached at 127.0.0.1:1 did not answer in 5 s"))


def test_a_hundred_errors_in_a_row_give_up_and_a_success_starts_the_count_again(tmp_path):
    t = timer(tmp_path)
    for _ in range(MAX_CONSECUTIVE_ERRORS - 1):
        fail(t, monotonic_ns())
    assert not gave_up(t)
    t.done(1, monotonic_ns(), monotonic_ns(), 0)
    assert t.consecutive_errors == 0 and not gave_up(t)
    for _ in range(MAX_CONSECUTIVE_ERRORS):
        fail(t, monotonic_ns())
    assert gave_up(t)
    assert failing(t, "task 3").startswith("store failing: 100 errors in a row over ")


def test_a_few_slow_errors_over_thirty_seconds_give_up_from_the_first_of_them(tmp_path):
    t = timer(tmp_path)
    first = monotonic_ns() - MAX_FAILING_NS - 1_000_000_000  # six 5 s timeouts ago
    for k in range(6):
        fail(t, first + k * 5_000_000_000)
    assert t.failing_since == first and gave_up(t)
    line = failing(t, "thread 0")
    assert line.startswith("store failing: 6 errors in a row over 3") and "on thread 0" in line
    assert "did not answer in 5 s" in line


def test_slow_errors_broken_by_a_success_do_not_give_up(tmp_path):
    t = timer(tmp_path)
    long_ago = monotonic_ns() - 2 * MAX_FAILING_NS
    fail(t, long_ago)
    t.done(1, monotonic_ns(), monotonic_ns(), 0)
    fail(t, monotonic_ns())
    assert t.consecutive_errors == 1 and not gave_up(t)
