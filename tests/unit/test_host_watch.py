"""The agent's host watch on this very host: a sample per interval whatever its processes
do (gone ones are left out, never raised), and a Watch that ends when its caller leaves,
the agent stops or its duration runs out."""

import os
import subprocess
import sys
import threading

import pytest

from bgbench.protos import worker_pb2 as pb
from bgbench.resources.processes import StoreWatch
from bgbench.worker import host_watch
from bgbench.worker.host_watch import HostWatch, check_watch_request, watch_samples


@pytest.fixture
def gone_pid() -> int:
    """The pid of a process that has already exited."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(30)
    return proc.pid


def test_processes_that_are_gone_leave_their_group_out_not_the_sample(gone_pid):
    watch = HostWatch(StoreWatch(pids=(gone_pid,), discover=False), load=lambda: [gone_pid])
    watch.prime()
    sample = watch.sample(0.5)
    assert sample is not None and len(sample.cpu_per_core) == os.cpu_count()
    assert not sample.HasField("load") and not sample.HasField("store")
    assert sample.interval_seconds > 0 and sample.memory_total_bytes > 0


def test_the_load_group_is_this_process_when_it_is_the_load():
    watch = HostWatch(StoreWatch(discover=False), load=lambda: [os.getpid()])
    watch.prime()
    sample = watch.sample(0.5)
    assert sample is not None and sample.load.processes == 1
    assert sample.load.cores_allowed >= 1 and sample.load.rss_bytes > 0


def request(seconds: float = 60.0) -> pb.WatchRequest:
    return pb.WatchRequest(experiment_id="w", duration_seconds=seconds)


def test_a_watch_ends_when_its_caller_leaves():
    taken: list[pb.HostSample] = []
    for sample in watch_samples(request(), lambda: len(taken) < 2, threading.Event()):
        taken.append(sample)
    assert len(taken) == 2
    assert all(s.source == "monitor" and not s.HasField("load") for s in taken)
    assert taken[0].elapsed_seconds < taken[1].elapsed_seconds


def test_a_watch_ends_when_the_agent_stops():
    stopping = threading.Event()
    taken = []
    for sample in watch_samples(request(), lambda: True, stopping):
        taken.append(sample)
        stopping.set()
    assert len(taken) == 1


def test_a_watch_ends_with_its_duration_and_grace(monkeypatch):
    monkeypatch.setattr(host_watch, "WATCH_GRACE_S", 0.0)
    taken = list(watch_samples(request(1.2), lambda: True, threading.Event()))
    assert 1 <= len(taken) <= 3


@pytest.mark.parametrize(
    "seconds", [0.0, -1.0, float("inf"), float("nan"), host_watch.MAX_WATCH_S + 1]
)
def test_a_watch_duration_out_of_bounds_is_refused(seconds):
    error = check_watch_request(request(seconds))
    assert error is not None and error.kind == "user" and "duration_seconds" in error.message


def test_a_watch_within_bounds_is_taken():
    ok = pb.WatchRequest(
        experiment_id="R1-T8", duration_seconds=30, watch=pb.StoreWatch(names=["postgres"])
    )
    assert check_watch_request(ok) is None
