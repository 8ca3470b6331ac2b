"""Whose fault a failure is, how it is recorded, how the command ends, when to retry.

Three kinds of failure end an experiment or a rating:
- bad input (UserError): one line naming what to fix, exit 2, never retried;
- an infrastructure fault (SystemFault): an agent died, froze or lost its network, a
  store stopped answering, a load made no progress. Exit 3; the experiment is recorded
  as a fault (never as an SLA verdict) and, with agents.on_failure = "retry", run again
  on the agents that answer;
- the client overloaded (the engine's words in a fault): the load processes could not
  keep up with their threads. Exit 3 and recorded, but never retried: the same T would
  overload again.

Liveness is judged here too: during every call to an agent the coordinator asks it for
its Status about every second (agents.py); `Liveness` turns the replies, or their
absence, into a fault once the agent is silent, or one of its load processes makes no
progress, for agents.heartbeat_timeout.
"""

import time
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from bgbench.errors import SystemFault, UserError
from bgbench.protos import worker_pb2 as pb

EXIT_OK, EXIT_USER, EXIT_FAULT, EXIT_INTERRUPTED = 0, 2, 3, 130
MAX_RETRIES = 2
CLIENT_OVERLOADED = "client overloaded"  # the engine's words for threads it could not serve
INTERRUPTED = "interrupted"  # what an interrupted rating is recorded with
STATUS_EVERY_S = 1.0
MIN_WAIT_S = 0.05
# A load process in one of these phases bumps its beats while it progresses.
WATCHED_PHASES = {
    "schema": "creating the schema",
    "load": "loading",
    "ready": "readying",
    "run": "running",
    "validate": "validating",
}
# In these a thread of the load process beats whatever the store does (a run has its own
# bound on a store that stopped answering): quiet beats mean the process itself froze.
SELF_BEATING = {"run", "validate"}


class FaultKind(StrEnum):
    USER = "user error"
    INFRASTRUCTURE = "infrastructure"
    CLIENT_OVERLOADED = "client overloaded"
    INTERRUPTED = "interrupted"


class LivenessFault(SystemFault):
    """An agent silent, or a load process without progress, for the heartbeat timeout;
    `at` is when it was found (Unix time), recorded with the experiment."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.at = time.time()


def classify(failure: BaseException | str) -> FaultKind:
    """The kind of an exception, or of an experiment's recorded fault text."""
    if isinstance(failure, UserError):
        return FaultKind.USER
    if isinstance(failure, KeyboardInterrupt):
        return FaultKind.INTERRUPTED
    if CLIENT_OVERLOADED in str(failure):
        return FaultKind.CLIENT_OVERLOADED
    return FaultKind.INFRASTRUCTURE


def recorded_kind(message: str) -> FaultKind:
    """The kind of a failed rating from the message it was recorded with."""
    if CLIENT_OVERLOADED in message:
        return FaultKind.CLIENT_OVERLOADED
    if "infrastructure" in message:
        return FaultKind.INFRASTRUCTURE
    if message == INTERRUPTED:
        return FaultKind.INTERRUPTED
    return FaultKind.USER


def exit_code(kind: FaultKind) -> int:
    if kind is FaultKind.USER:
        return EXIT_USER
    if kind is FaultKind.INTERRUPTED:
        return EXIT_INTERRUPTED
    return EXIT_FAULT


def ending(exc: BaseException) -> tuple[int, str]:
    """How `bgbench` ends on an exception: its exit code and its one line."""
    kind = classify(exc)
    if kind is FaultKind.USER:
        return exit_code(kind), f"bgbench: error: {exc}"
    if kind is FaultKind.INTERRUPTED:
        return exit_code(kind), "bgbench: interrupted"
    return exit_code(kind), f"bgbench: fault: {exc}"


def fault_time(exc: BaseException) -> float:
    return exc.at if isinstance(exc, LivenessFault) else time.time()


def should_retry(on_failure: str, attempt: int, fault: str) -> bool:
    """Whether an experiment that ended with `fault` runs again (attempt 0 was the first)."""
    return (
        bool(fault)
        and on_failure == "retry"
        and attempt < MAX_RETRIES
        and classify(fault) is FaultKind.INFRASTRUCTURE
    )


def resume_hint(rating_id: str, results_dir: Path | str) -> str:
    return f"bgbench rate --resume {rating_id} --results {results_dir}"


def experiment_fault(
    threads: int, fault: str, rating_id: str, results_dir: Path | str
) -> SystemFault:
    """What ends a rating whose experiment at T=`threads` hit `fault` (already recorded)."""
    return SystemFault(
        f"experiment at T={threads} hit an infrastructure failure ({fault}); it is recorded "
        f"as such. Fix the cause, then: {resume_hint(rating_id, results_dir)}"
    )


def rating_failure(exc: BaseException, rating_id: str, results_dir: Path | str) -> str:
    """The message a failed rating is recorded with (and the line it ends with)."""
    text = str(exc)
    kind = classify(exc)
    if kind is FaultKind.INTERRUPTED:
        return INTERRUPTED
    if kind is not FaultKind.INFRASTRUCTURE or "--resume" in text:
        return text
    return (
        f"infrastructure failure: {text}; it is recorded as such. Fix the cause, then: "
        f"{resume_hint(rating_id, results_dir)}"
    )


def run_failure(fault: str) -> str:
    """The message a single run an infrastructure failure ended is recorded with."""
    return f"infrastructure failure: {fault}" if fault else ""


class RatingLog(Protocol):
    """Where failed ratings are recorded (the results store)."""

    def finish_rating(
        self,
        rating_id: str,
        status: str,
        soar: float | None,
        soar_threads: int | None,
        socialites: int | None,
        summary: dict[str, Any] | None,
        message: str = "",
    ) -> None: ...


def record_failure(
    log: RatingLog, rating_id: str, exc: BaseException, results_dir: Path | str
) -> str:
    """Record a rating (or run) that `exc` ended as failed, with what it was; the message."""
    message = rating_failure(exc, rating_id, results_dir)
    log.finish_rating(rating_id, "failed", None, None, None, None, message)
    return message


def silent_agent(address: str, seconds: float, timeout: float, doing: str) -> str:
    return (
        f"agent {address} silent for {seconds:.1f} s while {doing} (heartbeat timeout "
        f"{timeout:g} s): it died, froze or lost its network; restart it, or raise "
        "agents.heartbeat_timeout for a slow host"
    )


def _where(process: pb.LoadProcessStatus) -> str:
    """`fragment F, PHASE` of a load process's status (its fragment when it has one)."""
    fragment = f"fragment {process.fragment}, " if process.fragment >= 0 else ""
    return fragment + WATCHED_PHASES.get(process.phase, process.phase)


def no_progress(address: str, process: pb.LoadProcessStatus, timeout: float) -> str:
    return (
        f"no load progress for {process.quiet_seconds:.1f} s on agent {address} "
        f"({_where(process)}; heartbeat timeout {timeout:g} s): the store stopped answering, "
        "or raise agents.heartbeat_timeout for a slow step"
    )


def stopped_responding(address: str, process: pb.LoadProcessStatus, timeout: float) -> str:
    return (
        f"load process {process.fragment} (pid {process.pid}) on agent {address} stopped "
        f"responding: no heartbeat for {process.quiet_seconds:.1f} s ({_where(process)}; "
        f"heartbeat timeout {timeout:g} s) while the agent still answers: it froze, was "
        "stopped or starved of CPU"
    )


class Liveness:
    """Judges one agent during one call from its Status replies (times are monotonic)."""

    def __init__(self, address: str, doing: str, timeout: float, now: float) -> None:
        self.address = address
        self.doing = doing
        self.timeout = timeout
        self.last_answer = now
        self.next_due = now + min(STATUS_EVERY_S, timeout)

    def wait(self, now: float) -> float:
        """How long to wait on the call before asking for the agent's status again."""
        return max(MIN_WAIT_S, self.next_due - now)

    def status_deadline(self, now: float) -> float:
        """A Status call may take until the agent has been silent for the timeout."""
        return max(MIN_WAIT_S, self.last_answer + self.timeout - now)

    def answered(self, reply: pb.StatusReply, now: float) -> str | None:
        """A fault if a load process in a watched phase made no progress for the timeout."""
        self.last_answer = now
        slack = min(STATUS_EVERY_S, self.timeout)
        for p in reply.processes:
            if p.alive and p.phase in WATCHED_PHASES:
                if p.quiet_seconds >= self.timeout:
                    blame = stopped_responding if p.phase in SELF_BEATING else no_progress
                    return blame(self.address, p, self.timeout)
                slack = min(slack, self.timeout - p.quiet_seconds)
        self.next_due = now + slack
        return None

    def unanswered(self, now: float) -> str | None:
        """A fault once no Status reply came for the timeout."""
        silent = now - self.last_answer
        if silent >= self.timeout:
            return silent_agent(self.address, silent, self.timeout, self.doing)
        self.next_due = now + min(STATUS_EVERY_S, self.timeout - silent)
        return None
