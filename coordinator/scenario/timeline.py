"""A scenario's steps, run by a thread of their own at their offsets from the experiment's
start, one after the other: a step due while the previous one still runs starts when that
one ends (and is recorded late, as it was). Each step becomes a StepRecord: when it was
planned, started and ended, whether it worked and one line of what was done; a `run` step
also its exit status and its output (bounded, secrets redacted). Steps the experiment
ended before are recorded as not reached.

`finish` (in a finally: the experiment's end, a fault, Ctrl-C, SIGTERM) stops the thread
(a running command's process group is killed; a node action is waited for, as long as its
timeout), then undoes what the scenario did: the nft table is deleted, every server it
touched is restored (launchers.nodes.restore) and every command node it paused, killed or
stopped is resumed or started.
"""

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from bgbench.coordinator.configuration.redaction import redact_text
from bgbench.coordinator.scenario.network import NetworkFaultError, NetworkFaults
from bgbench.coordinator.scenario.nodes import (
    NodeActions,
    Running,
    ScenarioNode,
    run_command,
)
from bgbench.errors import BGBenchError
from bgbench.launchers.nodes import NodeActionError
from bgbench.run_result.scenario import StepRecord

UNDO_TIMEOUT_S = 180.0  # each server's restore (a Cassandra node rejoining takes a while)
JOIN_GRACE_S = 10.0

Say = Callable[[str], None]
StepStarted = Callable[[int, float], None]  # step index, monotonic time it started
StepEnded = Callable[[StepRecord], None]


class StepSpec(Protocol):
    """A step as settings give it (coordinator/configuration/scenario.Step)."""

    @property
    def at_s(self) -> float: ...
    @property
    def do(self) -> str: ...
    @property
    def node(self) -> str | None: ...
    @property
    def from_(self) -> str: ...
    @property
    def command(self) -> str | None: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def label(self) -> str: ...


def step_line(record: StepRecord) -> str:
    """The console's line for a step that ran: '20.0 s: kill n2 — killed pid 1234'."""
    started = record.started_s if record.started_s is not None else record.at_s
    late = ""
    if record.started_s is not None and record.started_s - record.at_s >= 1.0:
        late = f" ({record.started_s - record.at_s:.1f} s late)"
    outcome = record.detail if record.ok else f"FAILED: {record.detail}"
    return f"{started:.1f} s: {record.text}{late} — {outcome}"


class ScenarioTimeline:
    """Runs `steps` on `nodes` from `start` until `finish`; thread-safe to finish from
    anywhere (twice is once)."""

    def __init__(
        self,
        steps: Sequence[StepSpec],
        nodes: Mapping[str, ScenarioNode],
        say: Say,
        on_step_start: StepStarted | None = None,
        on_step_end: StepEnded | None = None,
        undo_timeout_s: float = UNDO_TIMEOUT_S,
    ) -> None:
        self.steps = list(steps)
        self.nodes = nodes
        self.say = say
        self.on_step_start = on_step_start
        self.on_step_end = on_step_end
        self.undo_timeout_s = undo_timeout_s
        self.records = [
            StepRecord(index=i, at_s=s.at_s, action=s.do, node=s.node or "", label=s.label)
            for i, s in enumerate(self.steps)
        ]
        self.network = NetworkFaults()
        self.actions = NodeActions(nodes)
        self.undo_failures: list[str] = []
        self.origin = 0.0
        self._stop = threading.Event()
        self._running = Running()
        self._thread: threading.Thread | None = None
        self._finished = False
        self._finish_lock = threading.Lock()

    def start(self, origin: float | None = None) -> None:
        """Start the steps' clock at `origin` (monotonic; default now)."""
        self.origin = time.monotonic() if origin is None else origin
        self._thread = threading.Thread(target=self._run, name="scenario", daemon=True)
        self._thread.start()

    def finish(self) -> list[StepRecord]:
        """Stop (no step starts after this), wait for the step in progress, undo; the
        records. Undo failures are said and kept in `undo_failures`."""
        with self._finish_lock:
            if self._finished:
                return self.records
            self._finished = True
            self._stop.set()
            self._running.kill()
            thread = self._thread
            if thread is not None:
                current = next(
                    (r for r in self.records if r.started_s is not None and r.ended_s is None), None
                )
                wait = JOIN_GRACE_S + (self.steps[current.index].timeout_s if current else 0.0)
                thread.join(timeout=wait)
                if thread.is_alive():
                    self.undo_failures.append(
                        f"a scenario step was still running {wait:g} s after the experiment "
                        "ended; undoing anyway"
                    )
            self._undo()
            return self.records

    def _undo(self) -> None:
        try:
            deleted = self.network.close()
            if deleted:
                self.say(f"undo: {deleted}")
        except NetworkFaultError as exc:
            self.undo_failures.append(f"undo: {exc}")
            self.say(f"undo: {exc}")
        self.undo_failures += self.actions.undo(self.undo_timeout_s, self.say)

    def _run(self) -> None:
        for i, step in enumerate(self.steps):
            delay = self.origin + step.at_s - time.monotonic()
            if self._stop.wait(max(0.0, delay)):
                return
            started = time.monotonic()
            record = self.records[i]
            record.started_s = started - self.origin
            if self.on_step_start is not None:
                self.on_step_start(i, started)
            try:
                record.ok, record.detail = self._do(step, record)
            except (NodeActionError, NetworkFaultError, BGBenchError) as exc:
                record.ok, record.detail = False, str(exc)
            except Exception as exc:  # a step's failure is recorded, the run goes on
                record.ok, record.detail = False, f"{type(exc).__name__}: {exc}"
            record.detail = " ".join(record.detail.split())[:1000]
            record.ended_s = time.monotonic() - self.origin
            self.say(step_line(record))
            if self.on_step_end is not None:
                self.on_step_end(record)

    def _do(self, step: StepSpec, record: StepRecord) -> tuple[bool, str]:
        if step.do == "run":
            return self._run_command(step, record)
        if step.do == "heal":
            return True, self.network.heal(step.node)
        if step.node is None or step.node not in self.nodes:
            return False, f"no node {step.node}"
        if step.do == "partition":
            node = self.nodes[step.node]
            others = [n.net for name, n in self.nodes.items() if name != step.node]
            return True, self.network.partition(node.net, others, step.from_)
        return True, self.actions.act(step.node, step.do, step.timeout_s, self._running)

    def _run_command(self, step: StepSpec, record: StepRecord) -> tuple[bool, str]:
        if not step.command:
            return False, "no command"
        outcome = run_command(step.command, step.timeout_s, self._running)
        record.exit_status = outcome.exit_status
        record.output = redact_text(outcome.output)
        if outcome.timed_out:
            return False, f"killed after {step.timeout_s:g} s (its timeout)"
        if outcome.exit_status is None:
            return False, outcome.output
        if self._stop.is_set() and outcome.exit_status < 0:
            return False, "killed: the experiment ended"
        return outcome.exit_status == 0, f"exit status {outcome.exit_status}"
