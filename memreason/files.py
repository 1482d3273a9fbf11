"""File safety, at the bottom of the package (datasets, programs, eval and optimize all use it).

Writing: a file is replaced so that a crash leaves the old version or the new one, never half of
one. The new file keeps the old one's permission bits; a file written for the first time gets
what ``open()`` would have given it (0666 less the process's umask), not ``mkstemp``'s 0600. A
full disk is :class:`DiskFull`, naming the file and the bytes it needed.

Reading a file a user named goes through :func:`read_bounded` (regular files only, at most
``max_bytes`` read), then :func:`read_text_file` (UTF-8 text only) and :func:`read_json_file` (JSON):
one clear error for a missing file, a folder, device or pipe (never opened for reading, so a FIFO
cannot hang), unreadable bytes, binary content, bad JSON or too many bytes. At most :data:`MAX_BYTES`
are read, so a path such as ``/dev/zero`` or a huge file is refused in one line instead of filling memory.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, TextIO

__all__ = [
    "MAX_BYTES",
    "DiskFull",
    "is_disk_full",
    "read_bounded",
    "read_json_file",
    "read_text_file",
    "replace_atomically",
    "save_via",
    "write_atomically",
    "write_text",
]


class DiskFull(OSError):
    """No room left to write ``path``: ``needed`` bytes were to be written (the old file, if any, is intact)."""

    def __init__(self, path: str | Path, needed: int | None):
        amount = f"{needed} bytes" if needed is not None else "more room"
        super().__init__(errno.ENOSPC, f"no space left on the device: writing {path} needs {amount}", str(path))
        self.path, self.needed = Path(path), needed


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` says the device (or the user's quota) is full."""
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def write_atomically(path: str | Path, write: Callable[[TextIO], None]) -> None:
    """Call ``write(handle)`` on a temporary file beside ``path``, sync it, then rename it over ``path``.

    On a full disk the temporary file is removed, ``path`` is left as it was and :class:`DiskFull`
    says how many bytes the new version needed."""
    buffer = io.StringIO()
    write(buffer)  # the whole text first: how many bytes are needed is known before the disk is touched
    replace_atomically(path, buffer.getvalue().encode())


def replace_atomically(path: str | Path, data: bytes) -> None:
    """Put ``data`` in ``path`` as :func:`write_atomically` does (the old version or the new one, never half)."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        os.chmod(tmp, _mode_for(path))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if is_disk_full(exc) and not isinstance(exc, DiskFull):
            raise DiskFull(path, len(data)) from exc
        raise


def _mode_for(path: Path) -> int:
    """The permission bits ``path`` has now, or those a new file gets under the current umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mask = os.umask(0o022)  # read the umask (there is no getter before Python 3.13) and put it back
        os.umask(mask)
        return 0o666 & ~mask


def write_text(path: str | Path, text: str) -> None:
    """``path.write_text(text)``, atomically (see :func:`write_atomically`)."""
    replace_atomically(path, text.encode())


def save_via(path: str | Path, save: Callable[[Path], None]) -> None:
    """Let ``save`` write a file (``program.save``, say) under a temporary name beside ``path``, then rename it
    over ``path``: the old file or the new one, never half of one, and the old one's mode kept."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}{path.suffix}")
    try:
        save(tmp)
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if is_disk_full(exc) and not isinstance(exc, DiskFull):
            raise DiskFull(path, None) from exc
        raise


# -- reading ----------------------------------------------------------------------------------------------

MAX_BYTES = 16 * 2**20  # far above any rules table, ARC task, memory file or config this project writes


def read_json_file(path: str | Path, error: type[Exception], what: str, *, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON in ``path``; ``error`` (a one-line message naming ``what`` the file is) when it cannot be read."""
    path = Path(path)
    text = read_text_file(path, error, what, max_bytes=max_bytes)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{what} {path} is not valid JSON: {exc}") from None


def read_text_file(path: str | Path, error: type[Exception], what: str, *, max_bytes: int = MAX_BYTES) -> str:
    """The text of ``path`` (UTF-8, at most ``max_bytes``); ``error`` (one line naming ``what``) when it cannot be
    read, is not a regular file, holds more, or is not text (bytes that are not UTF-8, or NUL bytes)."""
    path = Path(path)
    data = read_bounded(path, error, what, max_bytes=max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {path} is not text (not UTF-8 at byte {exc.start}); give a text file") from None
    if "\x00" in text:
        raise error(f"{what} {path} is not text (it holds NUL bytes); give a text file")
    return text


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
        raise error(f"{what} {path} is larger than {_size(max_bytes)}")
    return data


def _size(count: int) -> str:
    """``count`` bytes as a short size: 16 MiB, 64 KiB, 100 bytes."""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:g} {unit}"
    return f"{count} bytes"
