"""`python -m bgbench.worker.study`: runs one of a workload's studies (sdk.Study) for
`bgbench study NAME`, in a process of its own so the coordinator never loads a binding.

The request is one JSON line on stdin (bounded): {"workload", "study", "config" (the
workload's section), "store", "options"}. Then stdin stays open: when it closes (the
coordinator ended, however), this process exits. Events are JSON lines on stdout:
{"say": line}, {"record": table, "row": row} for every raw measurement as it is made,
then {"tables": [...]}; or {"error": "user"|"system", "message": ...} before exit 2 or 3.
Anything else the bindings print goes to stderr.
"""

import json
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import asdict
from typing import IO, Any

from pydantic import ValidationError

from bgbench.errors import BGBenchError, UserError
from bgbench.sdk import AnyStudy, StoreBinding
from bgbench.workloads import registry

REQUEST_LIMIT = 4 * 1024 * 1024  # bytes of the request line
USER_EXIT, SYSTEM_EXIT = 2, 3


def read_request(stream: IO[bytes]) -> dict[str, Any]:
    line = stream.readline(REQUEST_LIMIT + 1)
    if len(line) > REQUEST_LIMIT or not line.endswith(b"\n"):
        raise UserError(f"study request: not one JSON line of at most {REQUEST_LIMIT} bytes")
    try:
        request = json.loads(line)
    except ValueError as exc:
        raise UserError(f"study request: not JSON ({exc})") from None
    keys = {"workload", "study", "config", "store", "options"}
    if not isinstance(request, dict) or set(request) != keys:
        raise UserError(f"study request: an object of exactly {sorted(keys)}")
    if not isinstance(request["options"], dict) or not isinstance(request["config"], dict):
        raise UserError("study request: config and options are objects")
    return request


def find(workload: str, name: str) -> AnyStudy:
    studies: Mapping[str, AnyStudy] = getattr(registry.get(workload), "studies", {})
    if name not in studies:
        raise UserError(f"unknown study {name!r} of workload {workload}")
    return studies[name]


class Events:
    """JSON lines to the coordinator, on a copy of stdout taken before fd 1 is sent to
    stderr (so a binding's stray print cannot break the stream)."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self.out = os.fdopen(os.dup(1), "w", encoding="utf-8")
        os.dup2(2, 1)
        self.lock = threading.Lock()

    def send(self, event: dict[str, Any]) -> None:
        line = json.dumps(event)
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()


def run(request: dict[str, Any], events: Events) -> None:
    workload, store = str(request["workload"]), str(request["store"])
    study = find(workload, str(request["study"]))
    try:
        config = registry.get(workload).config_model.model_validate(request["config"])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in (workload, *first["loc"]))
        raise UserError(f"{where}: {first['msg']}") from None
    options = dict(request["options"])

    def bindings(overrides: Mapping[str, Any]) -> StoreBinding:
        return registry.make_binding(workload, store, {**options, **overrides})

    def record(table: str, row: dict[str, Any]) -> None:
        events.send({"record": table, "row": row})

    def say(line: str) -> None:
        events.send({"say": str(line)})

    threading.Thread(target=_exit_when_stdin_closes, daemon=True).start()
    tables = study.run(config, bindings, record, say)
    events.send({"tables": [asdict(t) for t in tables]})


def _exit_when_stdin_closes() -> None:
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(SYSTEM_EXIT)  # the coordinator is gone: nothing would record what follows


def main() -> int:
    events = Events()
    try:
        run(read_request(sys.stdin.buffer), events)
    except UserError as exc:
        events.send({"error": "user", "message": str(exc)})
        return USER_EXIT
    except BGBenchError as exc:
        events.send({"error": "system", "message": str(exc) or type(exc).__name__})
        return SYSTEM_EXIT
    except KeyboardInterrupt:
        return SYSTEM_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main())
