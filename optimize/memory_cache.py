"""Work shared across trials: semantic memories keyed by what built them, and per-directory locks.

    cache = MemoryCache(study_dir / "memories")
    key = cache.key(program="hdr", level=1, seed=0, knobs={"K": 2, "N": 3}, memory_lm="embedded", ...)
    with cache.holding(key):                 # one builder per key, across threads and processes
        record = cache.get(key)              # a memory record (MemoryProgram.memorize's, with tokens), or None
        if record is None:
            record = build(...); cache.put(key, record)

A trial whose consolidation knobs (every knob but ``cot``: K, N for HDR), memory LM,
data and sampling settings match an earlier trial's restores that memory
(``MemoryProgram.restore``) instead of consolidating again. Records are JSON files,
written atomically, so a killed study keeps the memories it paid for.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from memreason.eval.harness.runs import read_json, write_json

# knobs that only change how scenes are answered, never the memory
ANSWER_ONLY_KNOBS = ("cot",)


def digest(data: Any, length: int = 16) -> str:
    """A short stable hash of JSON-able ``data``."""
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created if needed): excludes other threads and processes on this host."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class MemoryCache:
    """Memory records on disk, one JSON file per consolidation key, with hit and build counts."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.hits = self.builds = 0
        self._lock = threading.Lock()

    @staticmethod
    def key(*, knobs: dict[str, Any], **identity: Any) -> str:
        consolidation = {k: v for k, v in knobs.items() if k not in ANSWER_ONLY_KNOBS}
        return digest({"knobs": consolidation, **identity})

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    @contextmanager
    def holding(self, key: str) -> Iterator[None]:
        with file_lock(self.directory / f".{key}.lock"):
            yield

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.path(key)
        if not path.exists():
            return None
        with self._lock:
            self.hits += 1
        return read_json(path)

    def put(self, key: str, record: dict[str, Any], identity: dict[str, Any] | None = None) -> None:
        with self._lock:
            self.builds += 1
        write_json(self.path(key), {**record, "cache_key": key, "cache_identity": identity or {}})
