"""Programs tuned by ``python -m optimize``: read ``--config`` (knobs) and check ``--program-state`` (a DSPy state).

Both harnesses' CLIs call these; errors are :class:`TunedError`, one line and exit 2.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from memreason.files import MAX_BYTES, read_bounded, read_json_file
from memreason.installed import command

STATE_BYTES = 4 * MAX_BYTES  # a DSPy state holds demos: room for many


class TunedError(ValueError):
    """A ``--config`` or ``--program-state`` that cannot be used (reported as one line, exit 2)."""


def config_knobs(path: Path | None, program: str) -> dict[str, Any]:
    """The ``knobs`` object of a best.json (or compile's config.json) written for ``program``; {} without one."""
    if path is None:
        return {}
    saved = read_json_file(path, TunedError, "--config file")
    if not isinstance(saved, dict) or not isinstance(saved.get("knobs"), dict):
        raise TunedError(
            f'--config {path}: expected a JSON object with a "knobs" object (a best.json of {command("optimize")}, '
            f"or the config.json of {command('optimize')} compile)"
        )
    if saved.get("program") not in (None, program):
        raise TunedError(f"--config {path} is for {saved['program']}, not {program}")
    return dict(saved.get("knobs", {}))


def reader_knobs(per_object: bool, retrieve_k: int | None) -> dict[str, Any]:
    """The reader knobs the flags ``--per-object`` and ``--retrieve-k`` give; {} where neither is given."""
    knobs: dict[str, Any] = {"per_object": True} if per_object else {}
    if retrieve_k is not None:
        knobs["retrieve_k"] = retrieve_k
    return knobs


def state_digest(program, name: str, state: Path | None, *, load: str = "load") -> str | None:
    """Load ``state`` into ``program`` (the built ``name``) to check it fits: the file's sha256, or None without one.

    ``load`` names the program's method that reads it (``load_consolidation``: its consolidator only)."""
    if state is None:
        return None
    if not state.exists():
        raise TunedError(f"--program-state {state}: no such file")
    digest = hashlib.sha256(read_bounded(state, TunedError, "--program-state", max_bytes=STATE_BYTES)).hexdigest()
    try:
        getattr(program, load)(str(state))
    except FileNotFoundError:
        raise TunedError(f"--program-state {state}: no such file") from None
    except KeyError as exc:
        if exc.args != ("metadata",):  # a saved program, of another program: its predictors are not these
            raise TunedError(f"--program-state {state} does not fit {name}: {exc}") from None
        raise TunedError(  # no saved program at all: a study's best.json, a memory, a config
            f"--program-state {state} is not a saved program state (it has no 'metadata'); give the program.json or "
            "best_program.json a compile or study wrote (a study's best.json goes to --config)"
        ) from None
    except Exception as exc:  # a state saved from another program or other knobs
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TunedError(f"--program-state {state} does not fit {name}: {first}") from None
    return digest
