"""Memory files: JSON, written atomically, read back with one clear error when corrupt.

    save_memory(memory, "memory.json")          # a crash leaves the old file or the new one
    memory = load_memory("memory.json")         # ConceptMemory ("oe", "ps") or CheatsheetMemory
    empty_memory("ps")

A file records its ``format``; programs refuse a memory of another format.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from memreason.files import read_json_file, write_atomically

from .cheatsheet_memory import CheatsheetMemory
from .concept_memory import ConceptMemory

__all__ = ["FORMATS", "Memory", "MemoryFileError", "empty_memory", "load_memory", "save_memory"]

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


def load_memory(path: str | Path) -> Memory:
    path = Path(path)
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
