"""Descriptor numbers the worker keeps for itself, out of the way of the programs' pipes."""

from __future__ import annotations

import fcntl
import os

HIGH_FD = 100


def high_fd(fd: int) -> int:
    """Move `fd` to a number >= 100 (close-on-exec), so per-program pipes never collide with it."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD)
    os.close(fd)
    return moved
