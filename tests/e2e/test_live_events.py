"""--metrics-port and --events on real SQLite runs: Prometheus text scraped during a run,
the JSON lines of a finished one, and a busy port refused before anything starts."""

import json
import re
import socket
import subprocess
import urllib.error
import urllib.request

from tests.e2e.live_helpers import end, free_port, spawn, wait_for
from tests.helpers import BGBENCH


def sqlite_run(tmp, threads: int, duration: float, *extra: str) -> list[str]:
    return [
        "run", "--store", "sqlite", "--agents", "1", "--processes", "1", "--users", "300",
        "--threads", str(threads), "--duration", str(duration), "--results", str(tmp / "res"),
        "-p", f"store.options.path={tmp / 'bg.sqlite'}", *extra,
    ]  # fmt: skip


def scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            return reply.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return ""


def sample(text: str, name: str, labels: str = "") -> float | None:
    m = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def test_metrics_are_served_while_a_real_run_runs_and_stopped_after(tmp_path):
    port = free_port()
    # Long enough never to end by itself before the scrape: the test interrupts it.
    proc = spawn(
        sqlite_run(tmp_path, 2, 900, "--metrics-port", str(port)), tmp_path / "log", tmp_path
    )
    try:

        def busy() -> str:
            text = scrape(port)
            rate = sample(text, "bgbench_throughput_actions_per_second")
            p95 = sample(text, "bgbench_latency_seconds", '{quantile="0.95"}')
            return text if rate and p95 else ""

        text = wait_for(busy, "a scrape with throughput and latency quantiles")
        assert sample(text, "bgbench_throughput_actions_per_second") > 0
        p50 = sample(text, "bgbench_latency_seconds", '{quantile="0.5"}')
        p99 = sample(text, "bgbench_latency_seconds", '{quantile="0.99"}')
        assert 0 < p50 <= p99
        assert sample(text, "bgbench_actions_total") > 0
        assert sample(text, "bgbench_threads") == 2
        assert sample(text, "bgbench_experiment_phase", '{phase="run"}') == 1
        assert sample(text, "bgbench_errors") == 0
        assert re.search(r'^bgbench_agent_up\{agent="127\.0\.0\.1:\d+"\} 1\.0$', text, re.M)
        assert "# TYPE bgbench_actions_total counter" in text
        assert "python_gc" not in text  # its own registry, not prometheus-client's global one
    finally:
        code = end(proc)
    assert code == 130, (tmp_path / "log").read_text()
    with socket.socket() as s:  # the server stopped with the run
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_the_events_file_follows_a_real_short_run(tmp_path):
    events = tmp_path / "events.jsonl"
    proc = subprocess.run(
        [*BGBENCH, *sqlite_run(tmp_path, 2, 2, "--events", str(events), "--json")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = events.read_text().splitlines()
    parsed = [json.loads(line) for line in lines]  # every line is one JSON object
    kinds = [e["kind"] for e in parsed]
    assert kinds[0] == "rating_start" and kinds[-1] == "rating_end"
    assert kinds[1] == "experiment_start" and kinds[-2] == "verdict"
    progress = [e for e in parsed if e["kind"] == "progress"]
    assert progress and all(e["threads"] == 2 and len(e["agents"]) == 1 for e in progress)
    assert progress[-1]["actions"] > 0 and max(e["actions_per_s"] for e in progress) > 0
    assert any(
        e["latency_count"] and 0 < e["p50_ms"] <= e["p95_ms"] <= e["p99_ms"] for e in progress
    )
    assert sum(e["new_actions"] for e in progress) == progress[-1]["actions"]
    result = json.loads(proc.stdout)
    verdict = parsed[-2]
    assert verdict["verdict"] == ("pass" if result["passed"] else "fail")
    assert verdict["threads"] == 2 and verdict["phase"] == "run"
    assert verdict["reads"] == result["reads"]
    assert verdict["unpredictable_reads"] == result["unpredictable_reads"]
    assert parsed[-1]["status"] == "done"
    assert parsed[0]["rating_id"] == parsed[-1]["rating_id"] == result["experiment_id"]


def test_a_busy_metrics_port_is_one_line_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [*BGBENCH, *sqlite_run(tmp_path, 2, 2, "--metrics-port", str(port))],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert f"--metrics-port {port}" in line and "choose a free port" in line
    assert not (tmp_path / "res").exists()  # nothing started, nothing recorded


def test_an_unwritable_events_file_is_one_line(tmp_path):
    target = tmp_path / "no-such-dir" / "events.jsonl"
    proc = subprocess.run(
        [*BGBENCH, *sqlite_run(tmp_path, 2, 2, "--events", str(target))],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "--events" in line and "choose another file" in line
