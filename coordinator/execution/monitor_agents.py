"""Monitor-only agents (`bgbench agent --monitor-only`) on the store's hosts, watched for an
experiment: each one's Watch stream of HostSamples, gathered by stream ("monitor ADDRESS").

A resource source of the experiment (resource_watch.ResourceSource): start(duration) opens
a Watch on every monitor, stop() ends them and hands back what came. A monitor that dies,
refuses or falls silent for the heartbeat timeout mid-experiment costs its samples from
then on and a note, never the experiment: its stream is cancelled, and stop() waits for no
thread longer than a bounded join.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from bgbench.coordinator.execution.agents import HEARTBEAT_TIMEOUT_S, AgentClient, Credentials
from bgbench.errors import SystemFault, UserError
from bgbench.protos import worker_pb2 as pb
from bgbench.resources.model import HostSample
from bgbench.resources.processes import StoreWatch

STREAM_PREFIX = "monitor "
JOIN_S = 2.0  # stop() waits at most this for each stream's thread to end (a cancel is quick)
SUPERVISE_EVERY_S = 0.25
# Per stream: an hour at 0.5 s (as resource_watch keeps of an endpoint); beyond, dropped.
MAX_SAMPLES = 7200


class _Stream:
    """One monitor's Watch during one experiment."""

    def __init__(self, client: AgentClient) -> None:
        self.client = client
        self.samples: list[HostSample] = []
        self.dropped = 0
        self.note = ""
        self.last = time.monotonic()  # when it last spoke (or began)
        self.ended = threading.Event()
        self.thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        return f"{STREAM_PREFIX}{self.client.address}"

    def fail(self, why: str) -> None:
        """The first failure is the one noted; the stream is over."""
        if not self.note:
            self.note = f"{self.name}: {why} after {len(self.samples)} samples"
        self.client.cancel()


class MonitorAgents:
    """The monitors of an experiment's store hosts; handshaken at construction."""

    def __init__(
        self,
        addresses: list[str],
        credentials: Credentials | None,
        watch: StoreWatch,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT_S,
    ) -> None:
        self.watch = watch
        self.heartbeat_timeout = heartbeat_timeout
        self.clients = [AgentClient(a, credentials, heartbeat_timeout) for a in addresses]
        self._streams: list[_Stream] = []
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None
        try:
            self._handshake()
        except BaseException:
            self.close()
            raise

    def _handshake(self) -> None:
        """Every monitor at once; the user's errors first, then the faults, each naming the
        monitors that did not answer."""
        if not self.clients:
            return

        def shake(client: AgentClient) -> Exception | None:
            try:
                client.handshake(monitor=True)
            except (UserError, SystemFault) as exc:
                return exc
            return None

        with ThreadPoolExecutor(len(self.clients)) as pool:
            failures = [f for f in pool.map(shake, self.clients) if f is not None]
        users = [f for f in failures if isinstance(f, UserError)]
        if users:
            raise UserError(f"monitor {users[0]}")
        if failures:
            raise SystemFault(
                "monitor agents did not answer: " + "; ".join(str(f) for f in failures)
            )

    def start(self, duration_s: float, experiment_id: str = "") -> None:
        """A Watch on every monitor, each in its own thread, for `duration_s`."""
        self.stop()
        self._stopping.clear()
        self._streams = [_Stream(c) for c in self.clients]
        request = pb.WatchRequest(
            experiment_id=experiment_id,
            duration_seconds=duration_s,
            watch=self.watch.to_proto(),
        )
        for stream in self._streams:
            stream.thread = threading.Thread(
                target=self._follow, args=(stream, request), daemon=True
            )
            stream.thread.start()
        if self._streams:
            self._supervisor = threading.Thread(target=self._supervise, daemon=True)
            self._supervisor.start()

    def _follow(self, stream: _Stream, request: pb.WatchRequest) -> None:
        try:
            for sample in stream.client.watch(request):
                stream.last = time.monotonic()
                if len(stream.samples) < MAX_SAMPLES:
                    stream.samples.append(HostSample.from_proto(sample))
                else:
                    stream.dropped += 1
                if self._stopping.is_set():
                    break
            else:
                if not self._stopping.is_set():
                    stream.fail("its watch ended before the experiment did")
        except (UserError, SystemFault) as exc:
            if not self._stopping.is_set():
                stream.fail(_reason(exc, stream.client.address))
        except Exception as exc:  # a monitor never ends the experiment
            stream.fail(f"{type(exc).__name__}: {exc}")
        finally:
            stream.ended.set()

    def _supervise(self) -> None:
        """A monitor silent for the heartbeat timeout is given up: its stream cancelled."""
        while not self._stopping.wait(SUPERVISE_EVERY_S):
            now = time.monotonic()
            for stream in self._streams:
                silent = now - stream.last
                if not stream.ended.is_set() and silent > self.heartbeat_timeout:
                    stream.fail(f"silent for {silent:.1f} s")

    def received(self) -> dict[str, int]:
        """Samples so far, by stream (while the experiment runs)."""
        return {s.name: len(s.samples) for s in self._streams}

    def notes(self) -> list[str]:
        """The monitors lost so far, and samples dropped beyond the bound."""
        lost = [s.note for s in self._streams if s.note]
        return lost + [
            f"{s.name}: {s.dropped} samples beyond {MAX_SAMPLES} dropped"
            for s in self._streams
            if s.dropped
        ]

    def stop(self) -> tuple[dict[str, list[HostSample]], list[str]]:
        """Every Watch ended; the samples by stream, and a note per monitor lost."""
        self._stopping.set()
        for stream in self._streams:
            stream.client.cancel()
        deadline = time.monotonic() + JOIN_S
        for stream in self._streams:
            if stream.thread is not None:
                stream.thread.join(max(0.0, deadline - time.monotonic()))
                if stream.thread.is_alive():
                    stream.fail("did not end when cancelled")
        if self._supervisor is not None:
            self._supervisor.join(JOIN_S)
            self._supervisor = None
        return {s.name: list(s.samples) for s in self._streams}, self.notes()

    def close(self) -> None:
        if self._streams:
            self.stop()
        for client in self.clients:
            client.close()


def _reason(exc: Exception, address: str) -> str:
    """The error without the "agent ADDRESS: " its message starts with."""
    text = " ".join(str(exc).split())
    prefix = f"agent {address}: "
    return text[len(prefix) :] if text.startswith(prefix) else text
