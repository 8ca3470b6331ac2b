"""`python -m bgbench`, and the `bgbench` command's entry.

Ctrl-C must end bgbench with exit 130 and one line from the first instant, but importing
the command line takes most of a second: until coordinator/interfaces/cli.py's main takes over
(which turns it into a KeyboardInterrupt its agents are stopped by), an interrupt ends
the process at once, as nothing has been started yet.

`bgbench agent` goes straight to the worker's entry point: an agent host needs none of
the coordinator's command line (nor the libraries it imports).
"""

import os
import signal
import sys
from types import FrameType

INTERRUPTED = 130
USER_ERROR, FAULT = 2, 3


def exit_interrupted(_signum: int, _frame: FrameType | None) -> None:
    """SIGINT while nothing needs stopping: one line and exit 130, wherever it lands."""
    os.write(2, b"bgbench: interrupted\n")
    os._exit(INTERRUPTED)


def run_agent(args: list[str]) -> int:
    """`bgbench agent ARGS`: the worker agent, ended as every bgbench command ends."""
    from bgbench.errors import BGBenchError, UserError
    from bgbench.worker.agent import cli as agent_cli

    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        agent_cli(args)
    except KeyboardInterrupt:
        print("bgbench: interrupted", file=sys.stderr)
        return INTERRUPTED
    except UserError as exc:
        print(f"bgbench: error: {exc}", file=sys.stderr)
        return USER_ERROR
    except BGBenchError as exc:
        print(f"bgbench: fault: {exc}", file=sys.stderr)
        return FAULT
    finally:
        signal.signal(signal.SIGINT, exit_interrupted)  # nothing left to stop
    return 0


def main() -> None:
    signal.signal(signal.SIGINT, exit_interrupted)
    if sys.argv[1:2] == ["agent"]:
        sys.exit(run_agent(sys.argv[2:]))
    from bgbench.coordinator.interfaces.cli import main as cli_main  # the slow imports

    cli_main()


if __name__ == "__main__":
    main()
