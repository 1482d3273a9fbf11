"""Paths a command will write, checked before any work: one line (:class:`UsageError`) for one that cannot be written.

    check_output_dir(Path("runs/hdr-L1"), "--out")    # a directory to create, or to write into
    check_output_file(Path("ps.json"), "--out")       # a file to create or replace

Nothing is left behind: where the path does not exist yet, the nearest folder above it that does
is tried by making an empty folder in it and removing it again (permissions alone do not tell
whether ``/proc`` or a read-only mount takes a new entry).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import UsageError

__all__ = ["check_output_dir", "check_output_file"]


def check_output_dir(path: str | Path | None, flag: str = "--out") -> None:
    """``path`` is a directory a command may write into, or one it may create; None (the default place) passes."""
    if path is None:
        return
    path = _given(path, flag)
    if _exists(path, flag):
        if not path.is_dir():
            raise UsageError(f"{flag} {path} is a file, not a directory")
        _writable(path, path, flag)
    else:
        _writable(_nearest_folder(path, flag), path, flag)


def check_output_file(path: str | Path | None, flag: str = "--out") -> None:
    """``path`` is a file a command may create or replace; None passes."""
    if path is None:
        return
    path = _given(path, flag)
    if _exists(path, flag):
        if path.is_dir():
            raise UsageError(f"{flag} {path} is a directory, not a file")
        if not path.is_file():
            raise UsageError(f"{flag} {path} is not a regular file")
    _writable(_nearest_folder(path, flag), path, flag)


def _given(path: str | Path, flag: str) -> Path:
    if not str(path).strip():
        raise UsageError(f"{flag} needs a path, got an empty one")
    return Path(path).expanduser()


def _exists(path: Path, flag: str) -> bool:
    try:
        return path.exists()
    except OSError as exc:  # a folder on the way that may not be looked into
        raise UsageError(f"{flag} {path}: {exc.strerror or exc}") from None


def _nearest_folder(path: Path, flag: str) -> Path:
    """The nearest existing folder above ``path``: where it, or the folders leading to it, will be made."""
    for parent in [*path.parents, *path.absolute().parents]:  # as given first, so an error names what the user typed
        if _exists(parent, flag):
            if not parent.is_dir():
                raise UsageError(f"{flag} {path}: {parent} is a file, not a directory")
            return parent
    return Path(path.absolute().anchor)


def _writable(folder: Path, path: Path, flag: str) -> None:
    where = "" if folder == path else f" in {folder}"
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: cannot write{where} (permission denied)")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".memreason-", dir=folder))
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write{where} ({exc.strerror or exc})") from None
