"""The load engine of one fragment against SQLite, and the validator catching a stale store."""

import threading
from pathlib import Path

import numpy as np
import pytest

from bgbench.errors import UserError
from bgbench.run_result import RunResult
from bgbench.validation.logformat import NEVER, WRITE, read_log
from bgbench.worker.engine import FragmentEngine, RunSpec, log_path
from bgbench.workloads.bg.actions import Action, Item
from bgbench.workloads.bg.config import BGConfig
from bgbench.workloads.bg.generator import FragmentPlan
from bgbench.workloads.bg.stores.sqlite import SQLiteBinding, SQLiteOptions
from bgbench.workloads.bg.workload import WORKLOAD

PLAN = FragmentPlan((1.0,), 0.27)
CAPACITIES = PLAN.capacities


def config(mix="sessions", users=300, **workload) -> BGConfig:
    return BGConfig.model_validate(
        {
            "database": {"usercount": users, "commentcountperresource": 2, "confperc": 0.6},
            "workload": {"mix": mix, **workload},
        }
    )


def run(engine: FragmentEngine, tmp: Path, name: str, threads=4, duration=1.5) -> RunResult:
    spec = RunSpec(name, threads, duration, 0, 7, tmp / name)
    return engine.run(spec, threading.Event(), lambda *_: None)


def test_sessions_on_sqlite_validate_clean(tmp_path):
    engine = FragmentEngine(
        WORKLOAD, config(), "sqlite", {"path": str(tmp_path / "db.sqlite")}, CAPACITIES, 0
    )
    engine.prepare()
    summary = run(engine, tmp_path, "e1")
    assert summary.errors == 0 and not summary.aborted
    assert set(summary.per_action) == {a.name for a in Action}  # all 11 actions ran
    assert summary.actions > summary.sessions > 0
    result = engine.validate(tmp_path / "e1")
    assert result.log_records == summary.log_records == len(read_log(log_path(tmp_path / "e1", 0)))
    assert result.reads > 1000 and result.writes > 50
    assert result.unpredictable_reads == 0
    # a second experiment starts from where the first left off, and still validates
    run(engine, tmp_path, "e2")
    assert engine.validate(tmp_path / "e2").unpredictable_reads == 0


class StaleBinding(SQLiteBinding):
    """A cache with no invalidation in front of SQLite: profiles never change once seen."""

    def connect(self):
        conn = super().connect()
        cache: dict = {}
        real = conn.view_profile

        def cached(requester: int, member: int):
            key = (requester == member, member)
            if key not in cache:
                cache[key] = real(requester, member)
            return cache[key]

        conn.view_profile = cached
        return conn


def test_the_validator_catches_a_stale_store(tmp_path):
    cfg = config(mix="high", users=100)
    binding = StaleBinding(SQLiteOptions(path=str(tmp_path / "db.sqlite")))
    engine = FragmentEngine(WORKLOAD, cfg, "sqlite", {}, CAPACITIES, 0, binding=binding)
    engine.prepare()
    run(engine, tmp_path, "stale", threads=4, duration=2)
    result = engine.validate(tmp_path / "stale")
    assert result.unpredictable_reads > 0
    assert result.by_action["VP"].unpredictable == result.unpredictable_reads  # only VP was cached
    example = result.examples[0]
    assert example["action"] == Action.VP
    assert example["item"] in (Item.FRIEND_COUNT, Item.PENDING_COUNT)


class FailingWrites(SQLiteBinding):
    def connect(self):
        conn = super().connect()

        def broken(*_args):
            raise RuntimeError("disk on fire")

        conn.thaw_friendship = broken
        return conn


def test_failed_writes_are_logged_as_unknown_and_force_a_reload(tmp_path):
    binding = FailingWrites(SQLiteOptions(path=str(tmp_path / "db.sqlite")))
    engine = FragmentEngine(
        WORKLOAD, config(mix={"TF": 1, "VP": 1}), "sqlite", {}, CAPACITIES, 0, binding=binding
    )
    engine.prepare()
    summary = run(engine, tmp_path, "f1", threads=2, duration=1)
    assert summary.errors > 0
    assert summary.state_uncertain
    assert summary.error_counts[0].type == "RuntimeError"
    records = read_log(log_path(tmp_path / "f1", 0))
    writes = records[records["kind"] == WRITE]
    assert len(writes) > 0 and np.all(writes["end"] == NEVER)
    # unknown outcomes are not counted against the store
    assert engine.validate(tmp_path / "f1").unpredictable_reads == 0
    second = run(engine, tmp_path, "f2", threads=2, duration=0.5)
    assert second.start_state.startswith("reload")
    assert run(engine, tmp_path, "f3", threads=0, duration=0.1).start_state.startswith("reload")


class DeadStore(SQLiteBinding):
    def connect(self):
        conn = super().connect()
        conn.conn.close()  # every call now raises ProgrammingError
        return conn


def test_a_dead_store_ends_the_experiment_early(tmp_path):
    binding = DeadStore(SQLiteOptions(path=str(tmp_path / "db.sqlite")))
    engine = FragmentEngine(
        WORKLOAD, config(mix="low"), "sqlite", {}, CAPACITIES, 0, binding=binding
    )
    engine.prepare()
    summary = run(engine, tmp_path, "dead", threads=2, duration=30)
    assert "store failing" in summary.aborted
    assert summary.elapsed < 25  # ended by the failures, not by the clock


@pytest.mark.parametrize("concurrency", ["asyncio", "threads"])
def test_interarrival_time_paces_each_thread(tmp_path, concurrency):
    """BG's ClientThread sleeps interarrivaltime between one unit's end and the next's start."""
    cfg = config(mix={"VP": 1}, interarrivaltime=100)
    engine = FragmentEngine(WORKLOAD, cfg, "null", {"concurrency": concurrency}, CAPACITIES, 0)
    engine.prepare()
    summary = run(engine, tmp_path, "paced", threads=2, duration=1)
    # 2 threads, one unit and a 100 ms sleep each, for 1 s: at most 2 * 10 units
    assert 2 <= summary.sessions <= 22
    actions = np.load(tmp_path / "paced" / "actions-f0.npy")
    for t in (0, 1):
        mine = np.sort(actions[actions["thread"] == t], order="start")
        assert len(mine) >= 2
        # from one action's end to the next one's intended and actual start: the sleep
        assert np.all(mine["intended"][1:] - mine["end"][:-1] >= 100_000_000)
        assert np.all(mine["start"][1:] >= mine["intended"][1:])
    engine.close()


def test_think_time_spaces_the_actions_of_a_session(tmp_path):
    cfg = config(mix={"ViewSelfProfileSession": 1}, thinktime=50)
    engine = FragmentEngine(WORKLOAD, cfg, "null", {}, CAPACITIES, 0)
    engine.prepare()
    run(engine, tmp_path, "think", threads=1, duration=1)
    actions = np.load(tmp_path / "think" / "actions-f0.npy")
    vp = actions[actions["action"] == Action.VP]
    vtr = actions[actions["action"] == Action.VTR]
    n = min(len(vp), len(vtr))
    assert n >= 3
    gaps = vtr["start"][:n] - vp["end"][:n]
    assert np.all(gaps >= 50_000_000)  # 50 ms think time between VP and VTR
    assert np.all(actions["intended"] <= actions["start"])


@pytest.mark.parametrize("policy", ["carry", "reload", "readback"])
def test_every_start_state_policy_validates_clean(tmp_path, policy):
    engine = FragmentEngine(
        WORKLOAD,
        config(mix="high", users=200),
        "sqlite",
        {"path": str(tmp_path / "db.sqlite")},
        CAPACITIES,
        0,
    )
    engine.prepare()
    for i in range(3):
        name = f"{policy}{i}"
        spec = RunSpec(name, 4, 0.7, 0, i, tmp_path / name, start_state=policy)
        summary = engine.run(spec, threading.Event(), lambda *_: None)
        assert summary.start_state == policy
        result = engine.validate(tmp_path / name)
        assert result.writes > 0
        assert result.unpredictable_reads == 0, (policy, i, result.examples[:2])


def test_readback_sees_what_the_store_holds(tmp_path):
    engine = FragmentEngine(
        WORKLOAD,
        config(mix="high", users=200),
        "sqlite",
        {"path": str(tmp_path / "db.sqlite")},
        CAPACITIES,
        0,
    )
    engine.prepare()
    run(engine, tmp_path, "r0", threads=4, duration=0.7)
    state = engine.fragment.state
    carried = (state.friend_counts(), state.pending_counts())
    spec = RunSpec("r1", 0, 0.1, 0, 1, tmp_path / "r1", start_state="readback")
    engine.run(spec, threading.Event(), lambda *_: None)
    state = engine.fragment.state
    assert np.array_equal(state.friend_counts(), carried[0])
    assert np.array_equal(state.pending_counts(), carried[1])
    assert not np.array_equal(carried[0], engine.fragment.fragment.initial_friend_count)


def test_the_null_store_cannot_read_back(tmp_path):
    engine = FragmentEngine(WORKLOAD, config(), "null", {}, CAPACITIES, 0)
    engine.prepare()
    with pytest.raises(UserError, match="carry or reload"):
        engine.run(
            RunSpec("n", 1, 0.1, 0, 1, tmp_path / "n", start_state="readback"),
            threading.Event(),
            lambda *_: None,
        )
