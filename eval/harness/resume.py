"""Continuing a run directory: what it already holds, and whether a new request matches it.

    finished = read_examples(run_dir / "examples.jsonl")   # {(run, id): record}; a torn last line is cut off
    check_same_config(saved_config, new_config, run_dir)  # raises RunDirError on any difference that matters

A run is identified by what decides its results (program, data, models, sampling);
how it is executed (threads, retries, timeouts, the server's address, the cache
directory) may change between a crash and its resumption.
"""

from __future__ import annotations

import json
import os
from dataclasses import MISSING, field, fields
from pathlib import Path
from typing import Any, Callable

from memreason.files import read_json_file

# Keys of every run's config that are not fields of a config class: identity() fills in the models' defaults.
MODEL_KEYS = ("lm", "memory_lm")


def identity_field(default: Any = MISSING, **kwargs: Any) -> Any:
    """A dataclass field that decides a run's results: a run directory holding another value is another run
    (checked on ``--resume``); other fields only decide how a run runs (threads, retries, the cache)."""
    if "default_factory" not in kwargs:
        kwargs["default"] = default
    return field(metadata={"identity": True}, **kwargs)


def identity_keys(*classes: type, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The names of the fields marked :func:`identity_field` in ``classes`` (dataclasses), then ``extra``, in
    order, once each."""
    keys: dict[str, None] = {}
    for cls in classes:
        for f in fields(cls):
            if f.metadata.get("identity"):
                keys[f.name] = None
    keys.update(dict.fromkeys(extra))
    return tuple(keys)


# The memory records a continued run reads back: Experience-Transfer's per run, ARC's snapshots.
MEMORY_RECORDS = ("memory-run*.json", "memory/run*/*.json")


class RunDirError(ValueError):
    """A run directory that cannot be continued as asked (reported as one line, exit 2)."""


def read_examples(
    path: Path, *, repair: bool = True, keep: Callable[[dict[str, Any]], bool] | None = None
) -> dict[tuple[int, str], dict[str, Any]]:
    """The finished examples of a run, keyed by (run, example id); a later line for the same key wins,
    among the lines ``keep`` accepts (all by default).

    A crash can leave the last line half-written: it is ignored and, with ``repair``, cut
    from the file so the next append starts on a fresh line. A broken line elsewhere
    means the file was edited or damaged, and is an error.
    """
    if not path.exists():
        return {}
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1  # whole lines end here; what follows was still being written
    finished: dict[tuple[int, str], dict[str, Any]] = {}
    for number, raw in enumerate(data[:end].split(b"\n")[:-1], start=1):
        if raw.strip():
            record = _parse(raw)
            if record is None:
                raise RunDirError(
                    f"{path}: line {number} is not an example record; the file was damaged: "
                    "delete that line (its example is answered again) or start the run in another directory"
                )
            if keep is None or keep(record):
                finished[(int(record["run"]), str(record["id"]))] = record
    tail = data[end:]
    if tail.strip() and (record := _parse(tail)) is not None:  # whole, only its newline missing
        if keep is None or keep(record):
            finished[(int(record["run"]), str(record["id"]))] = record
        if repair:
            with open(path, "ab") as handle:
                handle.write(b"\n")
    elif tail and repair:  # torn by a crash: cut it off
        with open(path, "r+b") as handle:
            handle.truncate(end)
            os.fsync(handle.fileno())
    return finished


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(raw)
        int(record["run"]), str(record["id"])
    except (ValueError, KeyError, TypeError):
        return None
    return record if isinstance(record, dict) else None


def identity(config: dict[str, Any], keys: tuple[str, ...], defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """The part of a saved or requested config that decides results (``keys``), with ``defaults`` filled in."""
    defaults = defaults or {}
    out = {key: config.get(key, defaults.get(key)) for key in (*keys, *(k for k in MODEL_KEYS if k not in keys))}
    out["lm"] = out["lm"] or "embedded"
    out["memory_lm"] = out["memory_lm"] or out["lm"]
    if "knobs" in out and out["knobs"] is None:
        out["knobs"] = {}
    return out


def check_same_config(
    saved: dict[str, Any],
    requested: dict[str, Any],
    run_dir: Path,
    *,
    keys: tuple[str, ...],
    defaults: dict[str, Any] | None = None,
) -> None:
    """Raise :class:`RunDirError` naming every difference between the saved run and the request.

    ``keys`` name what decides the run's results (:func:`identity_keys` of its task's config), ``defaults`` the
    values of keys missing from configs saved before they existed."""
    old, new = identity(saved, keys, defaults), identity(requested, keys, defaults)
    diffs = [f"{key} {old[key]!r} != {new[key]!r}" for key in keys if _norm(old[key]) != _norm(new[key])]
    if diffs:
        raise RunDirError(
            f"{run_dir} holds a run with another config ({'; '.join(diffs)}): choose another --out, "
            f"or continue it with --resume {run_dir}"
        )


def _norm(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value == {}:  # no keyword settings: as a config saved before they existed (None)
        return None
    return value


def read_config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "config.json"
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError:
        raise RunDirError(f"{run_dir} holds no run (no config.json)") from None
    except (OSError, ValueError) as exc:
        raise RunDirError(f"cannot read {path}: {exc}") from None
    if not isinstance(config, dict) or "program" not in config:
        raise RunDirError(f"{path} is not a run config")
    return config


RUN_FILES = ("config.json", "examples.jsonl", "results.json", "processes.jsonl", "report.md", ".lock")  # kept as files
RUN_FOLDERS = ("traces", "memory", "dspy_cache")  # kept as folders


def refuse_damaged_entries(run_dir: Path) -> None:
    """Refuse in one line (:class:`RunDirError`) a run directory whose entries are of the wrong kind.

    A file the run keeps (``results.json``, ``examples.jsonl``, ``.lock``, a memory record, ...) that
    is a folder or anything but a regular file, or a folder it keeps (``traces/``, ``dspy_cache/``)
    that is not a folder, would fail only when the run first writes there, after paid LM calls, or
    (``processes.jsonl``) lose the run's time record without a word; it is found here, before any.
    """
    files = [run_dir / name for name in RUN_FILES] + sorted(p for pattern in MEMORY_RECORDS for p in run_dir.glob(pattern))
    for path in files:
        if (path.exists() or path.is_symlink()) and not path.is_file():
            raise RunDirError(f"{path} is not a regular file, where the run keeps one; move it away, or choose another directory")
    for path in [run_dir / name for name in RUN_FOLDERS]:
        if (path.exists() or path.is_symlink()) and not path.is_dir():
            raise RunDirError(f"{path} is not a folder, where the run keeps one; move it away, or choose another directory")


def check_saved_records(run_dir: Path) -> None:
    """Read what a continued run reads back (its example records, its memory records) before any model loads:
    a damaged file raises :class:`RunDirError` naming it. A last line of ``examples.jsonl`` torn by a crash
    is no damage (the run cuts it off and answers that example again)."""
    read_examples(run_dir / "examples.jsonl", repair=False)
    for pattern in MEMORY_RECORDS:
        for path in sorted(run_dir.glob(pattern)):
            if not isinstance(read_json_file(path, RunDirError, "memory record"), dict):
                raise RunDirError(
                    f"memory record {path} is not a JSON object; the file was damaged: "
                    "delete it (that memory is built again) or start the run in another directory"
                )


def resumed_program(argv: list[str]) -> str | None:
    """The program saved in the run directory of ``--resume RUN_DIR`` when argv starts with it, else None."""
    if not argv or not argv[0].startswith("--resume"):
        return None
    value = argv[0].partition("=")[2] or (argv[1] if len(argv) > 1 else "")
    try:
        return str(json.loads((Path(value) / "config.json").read_text()).get("program"))
    except (OSError, ValueError, AttributeError):
        return None  # the CLI reports the bad directory itself


def continues(
    run_dir: Path | None,
    requested: dict[str, Any],
    *,
    keys: tuple[str, ...],
    defaults: dict[str, Any] | None = None,
    flag: str = "--out",
) -> bool:
    """Whether ``run_dir`` already holds the run ``requested`` asks for (to be continued); raises
    :class:`RunDirError` on another run's directory, before any model loads."""
    if run_dir is not None and run_dir.is_dir():
        refuse_damaged_entries(run_dir)
    if run_dir is not None and (run_dir / "config.json").exists():
        check_same_config(read_config(run_dir), requested, run_dir, keys=keys, defaults=defaults)
        check_saved_records(run_dir)
        return True
    if run_dir is not None and (run_dir / "examples.jsonl").exists():
        raise RunDirError(f"{run_dir} holds examples but no config.json; choose another {flag}")
    return False
