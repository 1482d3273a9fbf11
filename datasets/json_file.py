"""Reading a JSON file a user named: one clear error for a missing file, unreadable bytes, bad JSON or too many bytes.

At most :data:`MAX_BYTES` are read, so a huge file is refused in one line instead of filling memory;
anything but a regular file (``/dev/zero``, a FIFO that would block for ever, a folder) is refused at once.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 16 * 2**20  # far above any rules table, ARC task, memory file or config this project writes


def read_json_file(path: str | Path, error: type[Exception], what: str, *, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON in ``path``; ``error`` (a one-line message naming ``what`` the file is) when it cannot be read."""
    path = Path(path)
    data = read_bounded(path, error, what, max_bytes=max_bytes)
    try:
        return json.loads(data.decode())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{what} {path} is not valid JSON: {exc}") from None


def read_bounded(path: str | Path, error: type[Exception], what: str, *, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of ``path``, at most ``max_bytes`` of them; ``error`` (one line naming ``what``) when it cannot
    be read or holds more."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO with no writer would block an ordinary open for ever
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise error(f"{what} {path} is not a regular file (a folder, device or pipe); give a file")
    with open(fd, "rb") as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise error(f"{what} {path} is larger than {max_bytes / 2**20:g} MiB")
    return data
