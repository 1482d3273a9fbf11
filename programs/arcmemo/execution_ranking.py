"""Execution-ranked concept selection: rank concepts by running the programs they were abstracted from.

Not the paper's selector, which asks an LM to choose: a variant for small models, whose choices
are close to random, in the spirit of checking rules in code. A concept keeps the verified
programs it was abstracted from (:attr:`memreason.programs.arcmemo.concept_memory.Entry.programs`).
For a new task, each of them runs in the sandbox on the task's train inputs, and

    pair score     = the fraction of the expected output's cells the program's output matches
                     (0 when the program raises, times out or returns no valid grid, or a grid of another shape)
    program score  = the mean pair score over the train pairs
    concept score  = its best program's score (a concept without programs is not ranked)

The read keeps the ``top_k`` best concepts scoring above 0, ties in memory order; or, read by
solution, every concept kept with the ``top_k`` best programs scoring above 0 (all that was
abstracted from the solutions that come closest, as a whole). Only the
train pairs are read, never the test pairs; the programs are shown to no LM and never
answer for the solver, which writes its own program from the concepts' text.

    ranking = rank_concepts(memory, task.train, sandbox)
    ranking.scores               # [(name, score), ...], best first
    ranking.selected(top_k=3)    # the names a read keeps
    ranking.selected_by_solution(top_k=1)   # every concept kept with the best program
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from memreason.datasets.arc import ArcPair, Grid

from .arc_solver import Runner
from .concept_memory import ConceptMemory

__all__ = ["Ranking", "pair_score", "program_score", "rank_concepts"]


@dataclass(frozen=True)
class Ranking:
    """Concepts with stored programs and their scores, best first (ties in memory order)."""

    scores: list[tuple[str, float]]
    runs: int  # distinct programs run
    #: each distinct program's score and the concepts that keep it (memory order), best first, ties in memory order
    solutions: list[tuple[float, tuple[str, ...]]] = field(default_factory=list)

    def selected(self, top_k: int) -> list[str]:
        """The names of the ``top_k`` best concepts whose score is above 0."""
        return [name for name, score in self.scores if score > 0][:top_k]

    def selected_by_solution(self, top_k: int) -> list[str]:
        """Every concept that keeps one of the ``top_k`` best programs scoring above 0, best program first, each
        program's concepts in memory order, without repeats."""
        names: list[str] = []
        for score, concepts in [s for s in self.solutions if s[0] > 0][:top_k]:
            names += [name for name in concepts if name not in names]
        return names


def pair_score(output: Grid | None, expected: Grid) -> float:
    """The fraction of ``expected``'s cells that ``output`` matches; 0 for no output or another shape."""
    if output is None or len(output) != len(expected) or any(len(a) != len(b) for a, b in zip(output, expected)):
        return 0.0
    cells = sum(len(row) for row in expected)
    same = sum(a == b for got, want in zip(output, expected) for a, b in zip(got, want))
    return same / cells if cells else 0.0


def program_score(program: str, pairs: Sequence[ArcPair], sandbox: Runner) -> float:
    """The mean :func:`pair_score` of ``program`` over ``pairs``, run in ``sandbox`` (its limits hold)."""
    if not pairs:
        return 0.0
    outcomes = sandbox.run(program, [p.input for p in pairs])
    return sum(pair_score(o.output, p.output) for o, p in zip(outcomes, pairs)) / len(pairs)  # failed: no output


def rank_concepts(memory: ConceptMemory, pairs: Sequence[ArcPair], sandbox: Runner) -> Ranking:
    """Every concept of ``memory`` that keeps programs, scored on ``pairs`` (a task's train pairs); a program
    kept by several concepts runs once."""
    by_program: dict[str, float] = {}
    keepers: dict[str, list[str]] = {}  # program -> the concepts that keep it, in memory order
    ranked = []
    for index, (name, programs) in enumerate(memory.stored_programs()):
        if not programs:
            continue
        for program in programs:
            if program not in by_program:
                by_program[program] = program_score(program, pairs, sandbox)
            keepers.setdefault(program, []).append(name)
        ranked.append((name, max(by_program[p] for p in programs), index))
    ranked.sort(key=lambda item: (-item[1], item[2]))
    solutions = sorted(((score, tuple(keepers[p])) for p, score in by_program.items()), key=lambda s: -s[0])  # stable
    return Ranking([(name, score) for name, score, _ in ranked], len(by_program), solutions)
