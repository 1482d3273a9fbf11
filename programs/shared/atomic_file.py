"""Write a file so that a crash leaves the old version or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, TextIO

__all__ = ["write_atomically"]


def write_atomically(path: str | Path, write: Callable[[TextIO], None]) -> None:
    """Call ``write(handle)`` on a temporary file beside ``path``, sync it, then rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
