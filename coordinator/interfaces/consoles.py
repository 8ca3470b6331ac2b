"""The command line's two consoles (stdout for results, stderr for progress), made on
first use: rich costs a command that prints nothing (--help, a bad flag) no start-up."""

import functools
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

# Wide enough for the tables when output goes to a file or a CI log.
PIPED_WIDTH = 160


@functools.cache
def out() -> "Console":
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else PIPED_WIDTH)


@functools.cache
def err() -> "Console":
    from rich.console import Console

    return Console(stderr=True, width=None if sys.stderr.isatty() else PIPED_WIDTH)
