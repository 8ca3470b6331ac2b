"""Opening what a user names: only regular files, never more than a bound.

A FIFO, a character device (`/dev/zero`, `/dev/full`), a socket or a directory named
as a settings file, a log, an events file or a report must be refused with one line,
never read until memory runs out or block forever. Files are opened with O_NONBLOCK
(so a FIFO with no writer cannot block the open) and checked with fstat on the open
descriptor, so a path swapped between a check and the open changes nothing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO, TextIO

from bgbench.errors import UserError

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse(path: Path | str, what: str, mode: int) -> UserError:
    return UserError(f"{what} {path} is {_kind(mode)}, not a regular file")


def _os_error(path: Path | str, what: str, error: OSError) -> UserError:
    reason = error.strerror or type(error).__name__
    return UserError(f"{what} {path}: {reason}")


def _open_fd(path: Path | str, flags: int, what: str) -> int:
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            raise _os_error(path, what, error) from None
        if not stat.S_ISREG(mode):  # a FIFO with no reader refuses a non-blocking writer
            raise _refuse(path, what, mode) from None
        raise _os_error(path, what, error) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refuse(path, what, mode)
    os.set_blocking(fd, True)
    return fd


def open_regular(path: Path | str, what: str = "file") -> BinaryIO:
    """`path` opened for binary reading; a UserError if it is missing or not a regular file."""
    return os.fdopen(_open_fd(path, _READ_FLAGS, what), "rb")


def check_regular(path: Path | str, what: str = "file") -> Path:
    """`path` itself, after checking it names a regular file (for readers that open by name)."""
    os.close(_open_fd(path, _READ_FLAGS, what))
    return Path(path)


def read_bounded(path: Path | str, limit: int, what: str = "file") -> bytes:
    """The whole of a regular file of at most `limit` bytes; a UserError naming it otherwise."""
    with open_regular(path, what) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise UserError(f"{what} {path} is larger than {limit:,} bytes")
    return data


def read_bounded_text(path: Path | str, limit: int, what: str = "file") -> str:
    """`read_bounded` decoded as UTF-8, with one line naming the file if it is not."""
    data = read_bounded(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"{what} {path} is not UTF-8 (byte {error.start})") from None


def open_output(path: Path | str, what: str = "output file", append: bool = False) -> TextIO:
    """`path` opened for writing text: created, or an existing regular file (truncated
    unless `append`); a FIFO or a device is refused before anything is written."""
    flags = _WRITE_FLAGS | (os.O_APPEND if append else 0)
    fd = _open_fd(path, flags, what)
    if not append:
        os.ftruncate(fd, 0)
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8")


def check_output(path: Path | str, what: str = "output file") -> Path:
    """Refuse an output path that exists and is not a regular file, or whose directory
    does not exist, before any work is done (nothing is created)."""
    target = Path(path)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise UserError(f"{what} {path}: directory {target.parent} does not exist") from None
        return target
    except OSError as error:
        raise _os_error(path, what, error) from None
    if not stat.S_ISREG(mode):
        raise _refuse(path, what, mode)
    return target
