"""A study runs in its own worker process (bgbench.worker.study): its request and its
stream of events are bounded and checked on both sides."""

import io
import json
import subprocess
import sys

import pytest

from bgbench.coordinator.rating import study
from bgbench.errors import SystemFault, UserError


def test_a_bad_request_ends_the_worker_with_a_user_error():
    proc = subprocess.run(
        [sys.executable, "-m", "bgbench.worker.study"],
        input=b'{"workload": "sensorlog"}\n', capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    event = json.loads(proc.stdout)
    assert event["error"] == "user" and "study request" in event["message"]


def test_a_line_over_the_bound_is_refused(monkeypatch):
    monkeypatch.setattr(study, "LINE_LIMIT", 64)
    stream = io.BytesIO(b'{"say": "' + b"x" * 100 + b'"}\n')
    with pytest.raises(SystemFault, match="more than 64 bytes"):
        list(study._events(stream))


def test_events_are_followed_and_errors_keep_their_kind():
    recorded, said = [], []
    table = {"name": "t", "title": "T", "columns": ["a"], "rows": [{"a": 1}]}
    lines = [{"say": "hello"}, {"record": "load", "row": {"run": 1}}, {"tables": [table]}]
    tables = study._follow(iter(lines), lambda t, r: recorded.append((t, r)), said.append)
    assert said == ["hello"] and recorded == [("load", {"run": 1})]
    assert tables is not None and tables[0].rows == [{"a": 1}]
    with pytest.raises(UserError, match="bad"):
        study._follow(iter([{"error": "user", "message": "bad"}]), print, print)
    with pytest.raises(SystemFault, match="unknown event"):
        study._follow(iter([{"what": 1}]), print, print)
