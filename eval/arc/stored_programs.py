"""Programs for a concept memory written before concepts kept them, with no LM: what a build records now.

    report = attach_programs(memory, tasks, given, sandbox)     # memory changed in place
    report = attach_to_file("datasets/arc/memories/arc1d_ps.json", "datasets/arc/arc1d_solutions",
                            split="arc1d-seeds", sandbox=sandbox)

``build_memory`` now keeps, with each concept a write adds or revises, the program of the
verified solution it abstracted. A memory built before holds each concept's sources (task ids)
only. :func:`attach_programs` gives each concept the programs the build would have kept: for each
source in the order of its writes (the order of ``sources``), the source task's solution as
``build_memory --solutions`` finds it (a file named by the task's id, else by its concept:
:func:`memreason.eval.arc.solutions.given_solutions`), if it reproduces every train and test pair
of the task in the sandbox (:func:`memreason.eval.arc.seeding.passes_all`), kept by the memory's
own rule (:meth:`memreason.programs.ConceptMemory.add`: the newest three, no repeats). Every other
field stays as it was; the programs a concept held before are replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from memreason.datasets.arc import ArcTask, load_split
from memreason.programs.arcmemo.concept_memory import ConceptMemory
from memreason.programs.arcmemo.memory_file import MemoryFileError, load_memory, save_memory

from .seeding import passes_all
from .solutions import Solution, given_solutions

__all__ = ["AttachReport", "attach_programs", "attach_to_file"]


@dataclass
class AttachReport:
    """What :func:`attach_programs` found for the memory's sources."""

    verified: list[str] = field(default_factory=list)  # sources whose solution reproduces every pair: kept
    refused: list[str] = field(default_factory=list)  # sources whose solution gets a pair wrong: not kept
    missing: list[str] = field(default_factory=list)  # sources with no task in the split or no solution
    concepts: int = 0  # concepts that keep a program now


def attach_programs(memory: ConceptMemory, tasks: Sequence[ArcTask], given: Mapping[str, Solution], sandbox) -> AttachReport:
    """Give every concept of ``memory`` the verified programs of its sources (``given``: the solution of each
    task by id, over ``tasks``); each source's program runs once in ``sandbox``, on all its task's pairs."""
    by_id = {task.id: task for task in tasks}
    report = AttachReport()
    verified: dict[str, str] = {}
    sources = dict.fromkeys(source for entry in memory.entries for source in entry.sources)
    for source in sources:
        task, solution = by_id.get(source), given.get(source)
        if task is None or solution is None:
            report.missing.append(source)
        elif passes_all(task, solution.program, sandbox):
            verified[source] = solution.program
            report.verified.append(source)
        else:
            report.refused.append(source)
    memory.programs_from_sources(verified)
    report.concepts = sum(1 for _, programs in memory.stored_programs() if programs)
    return report


def attach_to_file(
    path: str | Path, solutions: str | Path, *, split: str, sandbox, out: str | Path | None = None, **generation: Any
) -> AttachReport:
    """:func:`attach_programs` on the memory file ``path`` with the solutions in ``solutions`` (a directory, as
    ``build_memory --solutions`` takes it) for the tasks of ``split`` (a generated split's knobs as
    ``generation``); written atomically to ``out`` (default: ``path``) as the memory's own save writes it."""
    memory = load_memory(path)
    if not isinstance(memory, ConceptMemory):
        raise MemoryFileError(f"memory file {path} holds a {memory.format}, not concepts")
    tasks, given = given_solutions(str(solutions), load_split(split, **generation), split=split)
    report = attach_programs(memory, tasks, given, sandbox)
    save_memory(memory, out or path)
    return report
