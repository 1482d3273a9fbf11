"""DSPy's response cache, opened so that reading it never runs code.

DSPy keeps LM responses on disk as pickles. A pickle can name any callable, so an
unrestricted cache in a shared run directory (or a project-wide ``--cache``) runs whatever
was planted in it when a run resumes. :func:`open_response_cache` opens the cache with
DSPy's restricted unpickler (``restrict_pickle=True``): only LiteLLM's and OpenAI's response
types, plain containers and numpy arrays load; anything else is refused, logged as a
warning, deleted, and the call is asked of the LM again (a cache miss).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

__all__ = ["open_response_cache", "SAFE_TYPES"]

logger = logging.getLogger(__name__)

# Types beyond DSPy's own allowlist that this library's LM calls store. The responses it caches are
# LiteLLM ``ModelResponse`` objects and plain dicts (both allowed by DSPy already), so none are needed.
SAFE_TYPES: tuple[type, ...] = ()


def open_response_cache(directory: Path) -> Any:
    """Make ``dspy.cache`` a disk and memory cache in ``directory`` that never unpickles arbitrary objects.

    Returns the new cache. An entry that the restricted unpickler refuses is reported once
    per entry as a warning naming the directory, then treated as a miss (DSPy deletes it).
    """
    import dspy
    from dspy.clients.disk_serialization import DeserializationError

    where = str(Path(directory).resolve())
    dspy.configure_cache(
        enable_disk_cache=True,
        enable_memory_cache=True,
        disk_cache_dir=where,
        restrict_pickle=True,
        safe_types=list(SAFE_TYPES),
    )
    cache = dspy.cache
    disk = cache.disk_cache
    read = disk.get

    def get(key: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return read(key, *args, **kwargs)
        except DeserializationError as exc:
            logger.warning("response cache %s: refused an entry (%s); the call is asked again", where, exc)
            raise

    disk.get = get  # DSPy's Cache.get turns the refusal into a miss and deletes the entry
    return cache
