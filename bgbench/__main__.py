"""`python -m bgbench`, and the `bgbench` command's entry.

Ctrl-C must end bgbench with exit 130 and one line from the first instant, but importing
the command line takes most of a second: until coordinator/interfaces/cli.py's main takes over
(which turns it into a KeyboardInterrupt its agents are stopped by), an interrupt ends
the process at once, as nothing has been started yet.
"""

import os
import signal
from types import FrameType

INTERRUPTED = 130


def exit_interrupted(_signum: int, _frame: FrameType | None) -> None:
    """SIGINT while nothing needs stopping: one line and exit 130, wherever it lands."""
    os.write(2, b"bgbench: interrupted\n")
    os._exit(INTERRUPTED)


def main() -> None:
    signal.signal(signal.SIGINT, exit_interrupted)
    from bgbench.coordinator.interfaces.cli import main as cli_main  # the slow imports

    cli_main()


if __name__ == "__main__":
    main()
