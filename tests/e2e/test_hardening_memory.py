"""Issue 24 item 17 through the real CLI: load processes fold their action timings as they
go and stream every action to disk; what `bgbench run` reports is still exactly what the
whole per-action arrays give (the former computation, tests/unit/test_hardening_memory.py).
Whether memory stays flat over a long run is a benchmark (benchmarks/memory_soak.py)."""

import json
from pathlib import Path

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from bgbench.protos import new_histogram
from bgbench.worker.measurement import histogram_of
from bgbench.workloads.bg.actions import Action
from tests.helpers import bgbench
from tests.unit.test_hardening_memory import (
    counts,
    reference_open_loop_delay,
    reference_sessions,
)


def pooled(hists: list[HdrHistogram]) -> HdrHistogram:
    out = new_histogram()
    for h in hists:
        out.add(h)
    return out


@pytest.mark.parametrize(
    "extra",
    [
        ["-p", "store.options.concurrency=asyncio"],
        ["-p", "store.options.concurrency=threads", "--target-rate", "4000"],
    ],
    ids=["tasks-closed-loop", "threads-open-loop"],
)
def test_a_run_reports_what_its_streamed_actions_give(tmp_path, extra):
    proc = bgbench(
        "run", "--store", "null", "--threads", "16", "--duration", "3", "--agents", "2",
        "--processes", "2", "--users", "2000", "--results", str(tmp_path), "--json",
        "-p", "rating.steady_state=false", "-p", "agents.heartbeat_timeout=60", *extra,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    open_loop = "--target-rate" in extra
    everything = []
    for agent in r["agents"]:
        files = sorted(Path(agent["log_dir"]).glob("actions-f*.npy"))
        assert len(files) == 2  # one per load process
        mine = [np.load(f) for f in files]
        actions = np.concatenate(mine)
        everything.append(actions)
        assert agent["actions"] == len(actions) > 0
        assert agent["errors"] == int((actions["status"] != 0).sum())
        response = HdrHistogram.decode(agent["response_hist"])
        assert counts(response) == counts(histogram_of(actions["end"] - actions["intended"]))
        sessions = HdrHistogram.decode(agent["session_hist"])
        assert counts(sessions) == counts(pooled([reference_sessions(a) for a in mine]))
        delays = [
            reference_open_loop_delay(a) if open_loop else a["start"] - a["intended"] for a in mine
        ]
        delay_p99 = histogram_of(np.concatenate(delays)).get_value_at_percentile(99) / 1000
        assert agent["client_delay_p99_ms"] == delay_p99
    actions = np.concatenate(everything)
    assert r["actions"] == len(actions)
    for row in r["per_action"]:
        of = actions[actions["action"] == Action[row["action"]]]
        assert row["count"] == len(of)
        assert row["errors"] == int((of["status"] != 0).sum())
        service = histogram_of(of["end"] - of["start"])
        assert row["service"]["max_ms"] == service.get_max_value() / 1000
        assert row["service"]["p99_ms"] == service.get_value_at_percentile(99) / 1000
