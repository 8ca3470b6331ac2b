"""The agent's stop signal to one load process, which can never block the agent.

multiprocessing's Event.set() waits, in Condition.notify_all, for every process waiting on
the event to wake; a load process frozen (SIGSTOP) inside Event.wait() never wakes, and the
agent hung with it (found by the coordinator as a silent agent a minute later). This flag
lives in the load process's shared counters: the agent only writes it, the load process
polls it, and nothing the load process does can hold the agent.
"""

import time
from multiprocessing.sharedctypes import SynchronizedArray
from typing import Any

from bgbench.worker.contracts import STOP

POLL_S = 0.02


class StopFlag:
    def __init__(self, counters: "SynchronizedArray[Any]") -> None:
        self._counters = counters

    def set(self) -> None:
        self._counters[STOP] = 1

    def clear(self) -> None:
        self._counters[STOP] = 0

    def is_set(self) -> bool:
        return bool(self._counters[STOP])

    def wait(self, timeout: float) -> bool:
        """True once set, False if `timeout` seconds pass first."""
        deadline = time.monotonic() + timeout
        while not self.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(POLL_S, left))
        return True
