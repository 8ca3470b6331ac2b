"""The agent watching its host while it works: a HostSample per progress interval, with the
agent's load processes and the store's processes on the host (bgbench/resources).

A run samples on its progress tick (worker/run_coordination.py); the Watch RPC, which a
monitor-only agent on a store's host serves, samples with no load of its own. Sampling
never breaks nor stops what it watches: a group whose processes cannot be read (gone,
denied, anything psutil or /proc refuses) is left out of that sample, a host that cannot be
read gives no sample, and either is said once in the agent's log.
"""

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from bgbench.errors import UserError
from bgbench.protos import worker_pb2 as pb
from bgbench.resources.host import HostSampler
from bgbench.resources.model import GroupSample
from bgbench.resources.processes import ProcessGroup, StoreWatch
from bgbench.worker.replies import error
from bgbench.worker.runner import LIVE_EVERY_S
from bgbench.worker.security import EXPERIMENT_ID

log = logging.getLogger("bgbench.agent")

SAMPLE_EVERY_S = LIVE_EVERY_S  # the progress interval
MAX_WATCH_S = 86_400.0  # a watch's longest duration: an experiment's longest
WATCH_GRACE_S = 10.0  # a watch outlives its duration by this, for the run's stopping
# For this long the store's processes are sought on every tick until found, and once found
# their membership is looked at on every tick (the load processes connect as the run starts
# and a store may fork a process per connection), not only on the group's own refresh.
SEEK_S = 5.0

Pids = Callable[[], list[int]]
T = TypeVar("T")


def _no_pids() -> list[int]:
    return []


class HostWatch:
    """Samples the host, the load processes (`load`: their pids) and the store's processes
    found by `watch` (discovery follows the load processes' connections)."""

    def __init__(self, watch: StoreWatch, load: Pids | None = None, source: str = "agent") -> None:
        self._said: set[str] = set()
        self._watch = watch
        self._clients = load or _no_pids
        clients = self._clients
        self.host = self._guard("host", lambda: HostSampler(source))
        self.load = self._guard("load", lambda: ProcessGroup.of_pids(clients)) if load else None
        self.store = self._new_store()
        self._found = False

    def _new_store(self) -> ProcessGroup | None:
        watch, clients = self._watch, self._clients
        return self._guard("store", lambda: ProcessGroup.store(watch, clients=clients))

    def prime(self) -> None:
        """A first look at the groups: counters primed, the store's processes sought, so
        the first interval's sample has them."""
        if self.load is not None:
            self._group("load processes", self.load)
        self._found = self._group("store processes", self.store) is not None

    def sample(self, elapsed_s: float) -> pb.HostSample | None:
        """The host over the interval since the last sample; None if the host could not be
        read. A group that could not be read is missing from it."""
        load = self._group("load processes", self.load)
        store = self._group("store processes", self.store)
        host = self.host
        taken = None
        if host is not None:
            taken = self._guard("host", lambda: host.sample(elapsed_s, load=load, store=store))
        self._found = self._found or store is not None
        if not self._found and elapsed_s < SEEK_S:  # after the host's sample: its interval
            self._seek()
        elif self.store is not None and elapsed_s < SEEK_S:  # backends forked for the run
            self.store.refresh_at_next_sample()
        return None if taken is None else taken.to_proto()

    def _seek(self) -> None:
        """A fresh look for the store's processes; one found is primed now and sampled
        from the next tick on."""
        fresh = self._new_store()
        if self._group("store processes", fresh) is not None:
            self._close(self.store)
            self.store, self._found = fresh, True
        else:
            self._close(fresh)

    def close(self) -> None:
        """The files the groups hold open, closed (the watch is over)."""
        for group in (self.load, self.store):
            self._close(group)

    def _close(self, group: ProcessGroup | None) -> None:
        if group is not None:
            self._guard("closing", group.close)

    def _group(self, what: str, group: ProcessGroup | None) -> GroupSample | None:
        return None if group is None else self._guard(what, group.sample)

    def _guard(self, what: str, call: Callable[[], T]) -> T | None:
        # Anything at all: a sample is an extra, the run or watch it rides on is the work.
        try:
            return call()
        except Exception as exc:  # whatever it is: the sample is the extra
            if what not in self._said:
                self._said.add(what)
                log.warning("cannot sample the %s (left out of samples): %s", what, exc)
            return None


def check_watch(watch: pb.StoreWatch, field: str = "watch") -> pb.Error | None:
    """A StoreWatch within bounds (StoreWatch says which): a few pids and names, a plain
    container name."""
    try:
        StoreWatch.from_proto(watch)
    except UserError as exc:
        return error("user", f"{field}: {exc}", field)
    return None


def check_watch_request(request: pb.WatchRequest) -> pb.Error | None:
    seconds = request.duration_seconds
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_WATCH_S):
        return error(
            "user",
            f"duration_seconds: {seconds!r} is not a duration within (0, {MAX_WATCH_S:.0f}] s",
            "duration_seconds",
        )
    if request.experiment_id and not EXPERIMENT_ID.fullmatch(request.experiment_id):
        return error(
            "user",
            f"experiment_id: {request.experiment_id[:80]!r} is not a plain name",
            "experiment_id",
        )
    return check_watch(request.watch)


def watch_samples(
    request: pb.WatchRequest, caller_active: Callable[[], bool], stopping: threading.Event
) -> Iterator[pb.HostSample]:
    """A Watch call's samples, one per interval, until the duration (and its grace) ends,
    the caller leaves or the agent stops. The request was checked (check_watch_request)."""
    watch = HostWatch(StoreWatch.from_proto(request.watch), source="monitor")
    try:
        watch.prime()
        t0 = time.monotonic()
        end = t0 + request.duration_seconds + WATCH_GRACE_S
        due = t0 + SAMPLE_EVERY_S
        while caller_active():
            if stopping.wait(max(0.0, due - time.monotonic())):
                return
            now = time.monotonic()
            if now > end or not caller_active():
                return
            due += SAMPLE_EVERY_S
            if due < now:  # after a stall, on with the next interval
                due = now + SAMPLE_EVERY_S
            sample = watch.sample(now - t0)
            if sample is not None:
                yield sample
    finally:
        watch.close()
