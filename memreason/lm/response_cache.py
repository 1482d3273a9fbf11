"""DSPy's response cache, kept on disk as data so that reading it never runs code.

DSPy keeps LM responses on disk as pickles, and a pickle can name any callable: a cache in a
shared run directory (or a project-wide ``--cache``) runs whatever was planted in it when a
run resumes. DSPy's restricted unpickler does not close that door (it trusts whole module
trees, and a dotted name reaches beyond them). So the disk layer here stores no pickle at all:
:func:`open_response_cache` makes ``dspy.cache`` a ``DataCache``, DSPy's own ``Cache``
(same keys, same memory cache, same hit and miss rules) whose disk layer is a
:class:`JsonDisk`: one SQLite file, ``responses.sqlite3``, holding each answer as JSON text.

- An answer replays exactly as it was stored: only plain data is written (dicts with string
  keys, lists, strings, numbers, booleans, None), which JSON gives back unchanged. An answer
  that is not plain data (an SDK object from LiteLLM's compatibility path) stays in memory
  for the process and is asked again in the next one.
- An entry that is not such JSON (damaged, or planted) is refused with one warning and is a
  miss: the call is asked of the LM again and the answer replaces it.
- A cache written by an earlier version (DSPy's pickles, ``cache.db`` files) is never
  unpickled: its keys are read as text, and each entry a run asks for is refused with one
  warning, then asked of the LM again.
- A store that cannot be opened (``responses.sqlite3`` a folder, not a database) is one line
  (:class:`memreason.lm.LMConfigError`). A store another process holds locked is waited for:
  after :data:`LOCK_NOTICE_SECONDS` that is said once ("waiting for the response cache, held by
  another process"), and after :data:`LOCK_TIMEOUT_SECONDS` it is given up in one line: when the
  run opens it, the run stops before any work (exit 2); during the run, the run goes on without it,
  its answers kept in memory and in the run's own records, so nothing is lost.
"""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any, Callable

from .config_error import LMConfigError

__all__ = ["open_response_cache", "JsonDisk", "LOCK_NOTICE_SECONDS", "LOCK_TIMEOUT_SECONDS", "STORE_NAME"]

logger = logging.getLogger(__name__)

STORE_NAME = "responses.sqlite3"
LOCK_NOTICE_SECONDS = 3.0  # a lock held this long by another process is said, once
LOCK_TIMEOUT_SECONDS = 60.0  # ... and given up after this long
_BUSY_STEP = 0.1  # seconds SQLite itself waits on a lock before this module looks at the clock again
_MISSING = object()


class CacheBusy(Exception):
    """The store stayed locked by another process for :data:`LOCK_TIMEOUT_SECONDS`."""


def _is_busy(error: sqlite3.OperationalError) -> bool:
    text = str(error).lower()
    return "locked" in text or "busy" in text


def is_plain(value: Any) -> bool:
    """Whether ``value`` is data that JSON gives back unchanged (no tuples, no non-string keys, no objects)."""
    if value is None or type(value) in (str, int, float, bool):
        return True
    if type(value) is list:
        return all(is_plain(item) for item in value)
    if type(value) is dict:
        return all(type(key) is str and is_plain(item) for key, item in value.items())
    return False


def legacy_keys(directory: Path) -> set[str]:
    """The keys of a cache an earlier version wrote in ``directory`` (DSPy's ``cache.db`` files), read as text.

    Only the key column is read, through a read-only connection; the pickled values are never touched.
    """
    keys: set[str] = set()
    for db in [directory / "cache.db", *sorted(directory.glob("*/cache.db"))]:
        if not db.is_file():
            continue
        try:
            with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as old:
                keys.update(key for (key,) in old.execute("SELECT key FROM Cache") if isinstance(key, str))
        except sqlite3.Error:
            continue  # not a cache we can list: nothing of it is read either way
    return keys


def from_json(text: str) -> Any:
    """The data ``text`` holds (JSON can hold nothing else), or ``_MISSING`` when it is not JSON.

    orjson reads it when it can (faster); the standard library when orjson cannot (integers beyond
    64 bits, NaN), so every value :meth:`JsonDisk.set` wrote comes back.
    """
    import orjson

    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except ValueError:
        return _MISSING


class JsonDisk:
    """A key-value store of JSON text in one SQLite file: the disk layer of :class:`DataCache`.

    It answers what DSPy's ``Cache`` asks of its disk cache (``get``, ``set``, ``delete``, ``in``,
    ``close``). Safe to share between threads (one connection behind a lock) and processes (SQLite's
    own locking, write-ahead log).
    """

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.path = self.directory / STORE_NAME
        self._lock = threading.Lock()
        self._said_waiting = False
        self._gave_up = False
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LMConfigError(
                f"response cache {self.directory}: cannot make it ({exc.strerror or exc}); give another --cache"
            ) from None
        if self.path.exists() and not self.path.is_file():
            raise LMConfigError(
                f"response cache {self.path} is not a file (a folder, device or pipe); move it away or give another --cache"
            )
        try:
            self._db = sqlite3.connect(str(self.path), timeout=_BUSY_STEP, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise LMConfigError(f"response cache {self.path} cannot be opened ({exc}); give another --cache") from None
        try:
            self._waiting(self._create)
        except CacheBusy:
            self._db.close()
            raise LMConfigError(
                f"response cache {self.path} is held by another process (waited {LOCK_TIMEOUT_SECONDS:g} s); "
                "run again once it is free, or give another --cache"
            ) from None
        except sqlite3.DatabaseError as exc:  # not a database (damaged, or some other file under this name)
            self._db.close()
            if "full" in str(exc):
                raise
            raise LMConfigError(
                f"response cache {self.path} is damaged ({exc}); move it away (its answers are asked again) or give another --cache"
            ) from None
        self._legacy = legacy_keys(self.directory)
        self._reported: set[str] = set()
        self._kept_in_memory: set[str] = set()
        if self._legacy:
            logger.debug("response cache %s: %d entries of an earlier version, never read", self.directory, len(self._legacy))

    def _create(self) -> None:
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def _waiting(self, work: Callable[[], Any]) -> Any:
        """``work()`` under the thread lock, tried again while another process holds the store locked: said once
        after :data:`LOCK_NOTICE_SECONDS`, :class:`CacheBusy` after :data:`LOCK_TIMEOUT_SECONDS`."""
        start = time.monotonic()
        while True:
            try:
                with self._lock:
                    return work()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
            waited = time.monotonic() - start
            if waited >= LOCK_TIMEOUT_SECONDS:
                raise CacheBusy
            if waited >= LOCK_NOTICE_SECONDS and not self._said_waiting:
                self._said_waiting = True
                logger.warning("waiting for the response cache %s, held by another process", self.path)
            time.sleep(_BUSY_STEP)

    def _run(self, work: Callable[[], Any], default: Any) -> Any:
        """``work()`` as :meth:`_waiting` runs it; once the store has stayed locked too long, ``default`` from then
        on, said in one line (the run goes on without the store: its answers stay in memory and its records)."""
        if self._gave_up:
            return default
        try:
            return self._waiting(work)
        except CacheBusy:
            self._gave_up = True
            logger.warning(
                "response cache %s: held by another process for %g s; going on without it (this run's answers are kept "
                "in memory and in its records, not in the cache)",
                self.path,
                LOCK_TIMEOUT_SECONDS,
            )
            return default

    def _refuse(self, key: str, why: str) -> None:
        """Say once for ``key`` that its entry was refused and the call is asked again."""
        with self._lock:
            if key in self._reported:
                return
            self._reported.add(key)
        logger.warning("response cache %s: refused an entry (%s); the call is asked of the LM again", self.directory, why)

    def get(self, key: str, default: Any = None) -> Any:
        """The answer stored under ``key``, or ``default`` (a miss) when there is none or it is not plain JSON."""
        row = self._run(lambda: self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone(), None)
        if row is None:
            if key in self._legacy:
                self._refuse(key, "stored as a pickle by an earlier version, never read")
            return default
        value = _MISSING if not isinstance(row[0], str) else from_json(row[0])
        if value is _MISSING:
            self._refuse(key, "not JSON data: damaged, or written by something else")
            return default
        return value

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` as JSON; an answer that is not plain data is not stored (memory only)."""
        if not is_plain(value):
            if key not in self._kept_in_memory:
                self._kept_in_memory.add(key)
                logger.debug("response cache %s: a %s answer is not plain data; kept in memory only", self.directory, type(value))
            return
        text = json.dumps(value)  # ASCII: even a lone surrogate comes back as it went in
        self._run(lambda: self._db.execute("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", (key, text)), None)

    def delete(self, key: str) -> bool:
        """Forget ``key``; whether it was there."""
        return self._run(lambda: self._db.execute("DELETE FROM responses WHERE key = ?", (key,)).rowcount > 0, False)

    def __contains__(self, key: str) -> bool:
        return self._run(lambda: self._db.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None, False)

    def __len__(self) -> int:
        return self._run(lambda: self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0], 0)

    def __iter__(self):
        return iter(self._run(lambda: [key for (key,) in self._db.execute("SELECT key FROM responses")], []))

    def close(self) -> None:
        with self._lock:
            self._db.close()


@functools.cache
def data_cache_class() -> type:
    """:class:`DataCache`, built on DSPy's ``Cache`` when first asked for (DSPy is imported late)."""
    from dspy.clients.cache import Cache

    class DataCache(Cache):
        """DSPy's two-level response cache (memory, then disk) whose disk layer is a :class:`JsonDisk`.

        Keys, the memory cache, and what counts as a hit or a miss are DSPy's own; only what is
        written to and read back from disk differs: JSON text, never a pickle.
        """

        def __init__(self, directory: Path, memory_max_entries: int = 1_000_000):
            super().__init__(
                enable_disk_cache=False,
                enable_memory_cache=True,
                disk_cache_dir=str(directory),
                memory_max_entries=memory_max_entries,
            )
            self.enable_disk_cache = True
            self.disk_cache = JsonDisk(Path(directory))

    return DataCache


def open_response_cache(directory: Path) -> Any:
    """Make ``dspy.cache`` a memory and disk cache in ``directory`` that stores data, never pickles.

    Returns the new cache (a ``DataCache``). What an earlier version left in ``directory``
    is never unpickled: each of its entries a run asks for is refused with one warning and asked
    of the LM again.
    """
    import dspy

    cache = data_cache_class()(Path(directory).resolve())
    with dspy._cache_lock:
        dspy.cache = cache
    return cache
