"""The solutions ``build_memory --solutions`` is given: a directory of programs, or re-ARC's verifiers.

    tasks, given = given_solutions("my/solutions", load_split("barc_seeds"), split="barc_seeds")
    tasks, given = given_solutions("rearc", load_split("barc_seeds"), split="barc_seeds")
    given[tasks[0].id].program    # what runs in the sandbox on every pair
    given[tasks[0].id].shown      # what the concept abstractor is shown
    given[tasks[0].id].source     # what the build's record keeps

A directory holds ``<name>.py`` files defining ``transform(grid)``; a task takes the file named
by its id, else the one named by its concept (:func:`memreason.datasets.arc.concept_of`: the
family of a generated task), so one family solution serves every instance of the family.
The folders this package ships are named too (:data:`SHIPPED_SOLUTIONS`: ``seed_solutions``,
``arc1d_solutions``); a directory of that name wins.
``rearc`` (:data:`REARC`) gives each task re-ARC's verifier for its id (or concept): the program
is the DSL's source plus the verifier, the abstractor sees the verifier with a reference of the
DSL primitives it uses (:mod:`memreason.datasets.arc.rearc_solutions`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from memreason.datasets.arc import ARC1D_SOLUTIONS, SEED_SOLUTIONS, ArcDataError, ArcTask, concept_of
from memreason.datasets.arc.rearc_solutions import abstraction_text, runnable_program, verifier_ids, verifier_source

__all__ = ["REARC", "SHIPPED_SOLUTIONS", "Solution", "given_solutions"]

log = logging.getLogger(__name__)

#: ``--solutions rearc``: re-ARC's verifier programs (reasoning-gym), instead of a directory.
REARC = "rearc"

#: ``--solutions NAME``: the folders of solutions this package ships, by name.
SHIPPED_SOLUTIONS = {"seed_solutions": SEED_SOLUTIONS, "arc1d_solutions": ARC1D_SOLUTIONS}


@dataclass(frozen=True)
class Solution:
    """A task's given solution: ``program`` runs in the sandbox, ``shown`` goes to the abstractor, ``source`` is recorded."""

    source: str
    program: str
    shown: str
    origin: str = "user"  # the record's "source": "user" (a directory) or "rearc"

    @classmethod
    def plain(cls, text: str) -> "Solution":
        """A program that is run, shown and recorded as it is."""
        return cls(text, text, text)


def given_solutions(
    solutions: str, tasks: list[ArcTask], *, split: str, named: bool = False
) -> tuple[list[ArcTask], dict[str, Solution]]:
    """The ``tasks`` that have a solution in ``solutions`` (a directory, or ``rearc``), and each one's
    :class:`Solution` by task id. ``named``: the tasks were named (``--tasks``), so each must have one."""
    if solutions == REARC:
        return _rearc(tasks, split=split, named=named)
    folder = Path(solutions).expanduser()
    if not folder.exists() and solutions in SHIPPED_SOLUTIONS:
        folder = SHIPPED_SOLUTIONS[solutions]
    if not folder.is_dir():
        raise ArcDataError(
            f"--solutions {folder} is not a directory (nor {REARC!r}, re-ARC's verifiers, "
            f"nor a shipped folder: {', '.join(SHIPPED_SOLUTIONS)})"
        )
    files = {f.stem: f for f in sorted(folder.glob("*.py"))}
    if not files:
        raise ArcDataError(f"no solutions (<task_id>.py or <concept>.py) in {folder}")
    matched = {t.id: files.get(t.id) or files.get(concept_of(t.id)) for t in tasks}
    missing = next((task_id for task_id, file in matched.items() if file is None), None)
    if named and missing:
        raise ArcDataError(f"no solution for task {missing!r} in {folder} (as <task_id>.py or <concept>.py)")
    used = {file.stem for file in matched.values() if file is not None}
    unused = [stem for stem in files if stem not in used]
    if not used:
        raise ArcDataError(
            f"unknown task id {unused[0]!r} in split {split!r}: no solution in {folder} names a task or concept of it"
        )
    if unused:
        log.warning("%d solution(s) in %s match no task of split %r (e.g. %r)", len(unused), folder, split, unused[0])
    chosen = [t for t in tasks if matched[t.id] is not None]
    texts = {stem: files[stem].read_text() for stem in used}
    return chosen, {t.id: Solution.plain(texts[matched[t.id].stem]) for t in chosen}


def _rearc(tasks: list[ArcTask], *, split: str, named: bool) -> tuple[list[ArcTask], dict[str, Solution]]:
    have = set(verifier_ids())
    key = {t.id: t.id if t.id in have else concept_of(t.id) for t in tasks}
    missing = next((t.id for t in tasks if key[t.id] not in have), None)
    if named and missing:
        verifier_source(missing)  # raises: no verifier for it
    chosen = [t for t in tasks if key[t.id] in have]
    if not chosen:
        raise ArcDataError(f"no task of split {split!r} has a re-ARC verifier (only ARC-AGI-1 training tasks have one)")
    return chosen, {
        t.id: Solution(
            source=verifier_source(key[t.id]),
            program=runnable_program(key[t.id]),
            shown=abstraction_text(key[t.id]),
            origin=REARC,
        )
        for t in chosen
    }
