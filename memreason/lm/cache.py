"""Where the local model's files live: one user cache, shared by the weights, the llama-server build and its logs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$MEMREASON_CACHE`` if set, else ``$XDG_CACHE_HOME/memreason`` (``~/.cache/memreason``)."""
    if os.environ.get("MEMREASON_CACHE"):
        return Path(os.environ["MEMREASON_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "memreason"
