"""A run directory: resolved config, one JSONL line per example, memory records, results.

    runs/<program>-<dataset>-<YYYYmmdd-HHMMSS>/
        config.json      what was asked for, fully resolved
        examples.jsonl   one line per (run, example), appended and flushed as each finishes
        memory-run<r>.json  the memory a program built in run r
        traces/          every LM call, per example and per memory build (eval/traces.py; python -m eval show)
        results.json     the tables
        report.md, *.png the tables and plots for a person
        dspy_cache/      DSPy's response cache for this run (unless --cache names another)

Everything in ``results.json`` except :data:`TIMING_KEYS` follows from the files, so a
resumed run's results equal an uninterrupted run's: compare them with :func:`comparable`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memreason.files import DiskFull, is_disk_full, write_atomically
from memreason.lm.redact import redact
from memreason.lm.response_cache import open_response_cache

from .errors import UsageError
from .options import LMOptions
from .resume import refuse_damaged_entries

# What depends on the process that produced the results (timings, threads, resumption).
TIMING_KEYS = ("wall_seconds", "execution")


def comparable(results: dict[str, Any]) -> dict[str, Any]:
    """``results`` without :data:`TIMING_KEYS`: equal for an interrupted-and-resumed run and an uninterrupted one."""
    return {key: value for key, value in results.items() if key not in TIMING_KEYS}


@dataclass
class RunConfig:
    """``config.json``: what a run asked for, resolved.

    ``harness`` is the harness's own config dataclass (``ExperienceTransferConfig``,
    ``ArcConfig``, ``BuildConfig``: what decides the results), ``lm`` and ``memory_lm`` the
    resolved model strings, ``options`` the command line's other options as given, and
    ``extra`` what the CLI derived (the digest of a program state, the task ids, the run
    directory). Written flat, with option names as keys, so ``--resume`` reads a run's own
    options back and a continued run is checked key by key against it.
    """

    harness: Any
    lm: str
    memory_lm: str
    options: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, options: LMOptions, harness: Any, *, lm: str | None = None, memory_lm: str | None = None, **extra: Any
    ) -> "RunConfig":
        """The config of a run started with ``options`` (models default to what the options name)."""
        lm = lm or options.lm or "embedded"
        return cls(harness, lm, memory_lm or options.memory_lm or lm, options.as_dict(), extra)

    def to_json(self) -> dict[str, Any]:
        return {**self.options, **asdict(self.harness), "lm": self.lm, "memory_lm": self.memory_lm, **self.extra}

    def write(self, run_dir: Path) -> None:
        write_json(run_dir / "config.json", self.to_json())


def read_json(path: Path) -> Any:
    with open(path) as handle:
        return json.load(handle)


def new_run_dir(root: Path, name: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = root / f"{name}-{stamp}"
    suffix = 1
    while path.exists():
        suffix += 1
        path = root / f"{name}-{stamp}-{suffix}"
    path.mkdir(parents=True)
    return path


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (a crash leaves the old file or the new one, never half of one), with no
    credentials in its URLs (:func:`memreason.lm.redact.redact`)."""
    write_atomically(path, lambda handle: json.dump(redact(data), handle, indent=1, default=str))


class JsonlWriter:
    """Append one JSON object per line, thread-safe, flushed to disk line by line."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._handle = open(path, "a")

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` as one line; on a full disk :class:`DiskFull` (a torn line is cut off on resume)."""
        line = json.dumps(record, default=str) + "\n"
        with self._lock:
            try:
                self._handle.write(line)
                self._handle.flush()
                os.fsync(self._handle.fileno())
            except OSError as exc:
                if is_disk_full(exc):
                    raise DiskFull(self.path, len(line.encode())) from exc
                raise

    def close(self) -> None:
        self._handle.close()


_response_cache: tuple[str, Any] | None = None  # (directory, the dspy Cache this process opened there)
_response_cache_lock = threading.Lock()


def use_response_cache(directory: Path) -> None:
    """Keep DSPy's response cache in ``directory`` (with the run, never silently in the home directory).

    Reading it never runs code (:func:`memreason.lm.response_cache.open_response_cache`: answers
    are stored as JSON; a damaged or planted entry, or a pickle an earlier version left, is refused
    with a warning and asked of the LM again). The same directory
    again keeps the open cache; another one closes the disk cache this
    process opened before, so a process that runs many cells or studies holds one set of
    file descriptors, not one per run.
    """
    import dspy

    global _response_cache
    where = str(Path(directory).resolve())
    with _response_cache_lock:
        if _response_cache is not None and _response_cache[0] == where and dspy.cache is _response_cache[1]:
            return
        previous = _response_cache[1] if _response_cache is not None else None
        _response_cache = (where, open_response_cache(Path(where)))
        disk = getattr(previous, "disk_cache", None)
        if disk is not None and hasattr(disk, "close"):
            disk.close()


def open_run_dir(path: Path | None, name: str, cache: Path | None) -> Path:
    """``path`` (or a new ``runs/<name>-<time>``), created, held by this process (:func:`hold_run_dir`),
    with DSPy's response cache in it (or in ``cache``)."""
    run_dir = path or new_run_dir(Path("runs"), name)
    run_dir.mkdir(parents=True, exist_ok=True)
    refuse_damaged_entries(run_dir)
    hold_run_dir(run_dir)
    use_response_cache(cache or run_dir / "dspy_cache")  # with the run (or where the user says), never in the home directory
    return run_dir


LOCK_NAME = ".lock"
_held: dict[str, int] = {}  # run directory -> the descriptor of its lock file, for as long as this process lives
_held_lock = threading.Lock()


def hold_run_dir(run_dir: Path) -> None:
    """Make this process the one writer of ``run_dir``, or refuse in one line (:class:`UsageError`).

    The lock is an advisory ``flock`` on ``run_dir/.lock``, which names its holder (process id, host,
    start time). The kernel drops it when the holder exits, however it ends, so a lock left by a dead
    process is taken over. A process holds a directory until it exits; holding it again is a no-op.
    """
    import fcntl
    import socket

    where = str(Path(run_dir).resolve())
    with _held_lock:
        if where in _held:
            return
        path = Path(where) / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 512, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise UsageError(f"{run_dir} is in use by {holder}; wait for it to end, or give another directory") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
        _held[where] = fd
