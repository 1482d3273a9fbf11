"""Memory files: JSON, written atomically, read back with one clear error when corrupt.

    save_memory(memory, "memory.json")          # a crash leaves the old file or the new one
    memory = load_memory("memory.json")         # ConceptMemory ("oe", "ps") or CheatsheetMemory
    memory = load_memory("arc1d_ps")            # a memory this package ships, by name
    empty_memory("ps")

A file records its ``format``; programs refuse a memory of another format. Where a memory is named
(``--memory``, :func:`load_memory`), a path to a file wins; a name that is no file reads the shipped
memory of that name (:data:`memreason.datasets.arc.MEMORIES`, listed by :func:`shipped_memories`).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from memreason.datasets.arc.splits import MEMORIES, shipped_memories  # re-exported: the shipped names
from memreason.files import read_json_file, write_atomically

from .cheatsheet_memory import CheatsheetMemory
from .concept_memory import ConceptMemory

__all__ = [
    "FORMATS",
    "Memory",
    "MemoryFileError",
    "empty_memory",
    "load_memory",
    "memory_path",
    "save_memory",
    "shipped_memories",
]

Memory = ConceptMemory | CheatsheetMemory
FORMATS = ("oe", "ps", "cheatsheet")


class MemoryFileError(ValueError):
    """A memory file that cannot be read as a memory."""


def empty_memory(format: str) -> Memory:
    if format not in FORMATS:
        raise ValueError(f"memory format must be one of {FORMATS}, got {format!r}")
    return CheatsheetMemory() if format == "cheatsheet" else ConceptMemory(format)


def save_memory(memory: Memory, path: str | Path) -> None:
    """Write ``memory`` to ``path`` atomically (temporary file, fsync, rename)."""
    write_atomically(path, lambda handle: json.dump(memory.to_json(), handle, indent=1))


def memory_path(spec: str | Path) -> Path:
    """The file a user's ``spec`` names: a memory file's path, or else a shipped memory's name (``arc1d_ps``,
    ``arc1d_ps.json``); :class:`MemoryFileError` listing the shipped names when it is neither."""
    path = Path(spec).expanduser()
    if path.exists() or path.is_symlink():  # a file (or something that is not one: refused by the reader, named)
        return path
    shipped = shipped_memories()
    name = str(spec).removesuffix(".json")
    if name in shipped:
        return MEMORIES / f"{name}.json"
    raise MemoryFileError(f"cannot read memory file {spec}: no such file (nor a shipped memory: {', '.join(shipped)})")


def load_memory(path: str | Path) -> Memory:
    """The memory in ``path``: a memory file, or the name of a shipped memory (:func:`memory_path`)."""
    path = memory_path(path)
    data = read_json_file(path, MemoryFileError, "memory file")
    if not isinstance(data, dict) or data.get("format") not in FORMATS:
        raise MemoryFileError(f"memory file {path} has no known 'format' (one of {', '.join(FORMATS)})")
    try:
        if data["format"] == "cheatsheet":
            return CheatsheetMemory.from_json(data)
        return ConceptMemory.from_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise MemoryFileError(f"memory file {path} is corrupt: {where}: {first['msg']}") from None
    except ValueError as exc:
        raise MemoryFileError(f"memory file {path} is corrupt: {exc}") from None
