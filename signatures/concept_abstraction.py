"""Signatures of ArcMemo's memory write, concept abstraction (paper section 3.3), for any problem.

OE:  derivation = Derive(problem, solution)                 # post-hoc observations and thoughts
     concepts   = AbstractOE(problem, solution, derivation) # situation / suggestion pairs
PS:  pseudocode = Pseudocode(solution)                      # high-level steps, no implementation detail
     concepts   = AbstractPS(memory, pseudocode, solution)  # new or revised typed concepts

The problem and its solution are text; the ARC programs pass a puzzle (with the grid format
stated first) and the program that solves it: a Python ``transform``, or a program written with
a library of primitives followed by a reference of those it uses (``build_memory --solutions
rearc``). The instructions ask for concepts in plain words, not in a library's names, since a
later solver may not have that library.

PS abstraction sees the existing memory in compressed form (first, so calls share
a prefix) and revises a concept by reusing its exact title.

List outputs carry length bounds (``Len``): every verified solution yields at least one
concept, and a derivation cannot run on forever. Under a JSON grammar
(``memreason.lm.bounded_json``) the bounds are enforced while decoding; without them a small
model's cheapest valid answer is an empty list.
"""

from __future__ import annotations

from typing import Annotated

import dspy
from annotated_types import Len

from .concepts import OEConcept, PSConcept

_SOLUTION = "the solution, e.g. a program that solves every example (with a reference of any library primitives it calls)"


class DeriveSolutionTrace(dspy.Signature):
    """Reconstruct how one could have found this solution to the problem.

    Write an interleaved sequence of steps, each starting with "Observation:" (a concrete
    fact the problem shows, e.g. in its examples) or "Thought:" (an inference drawn from
    earlier observations), ending with the rule or idea the solution implements."""

    problem: str = dspy.InputField(desc="the problem that was solved (for a puzzle: its examples)")
    solution: str = dspy.InputField(desc=_SOLUTION)
    derivation: Annotated[list[str], Len(1, 8)] = dspy.OutputField(desc="the steps, each 'Observation: ...' or 'Thought: ...'")


class AbstractOEConcepts(dspy.Signature):
    """Turn a solved problem into reusable lessons for future, different problems.

    Each lesson pairs a situation (the observations that call for the idea, stated in
    general terms, not tied to this problem's exact values such as colours, sizes or names)
    with a suggestion (what to try). Keep ideas separate: one idea per lesson, so they can be
    recombined later. Say what to do in plain words, not with the names of library
    primitives the solution may call."""

    problem: str = dspy.InputField(desc="the problem that was solved (for a puzzle: its examples)")
    solution: str = dspy.InputField(desc=_SOLUTION)
    derivation: list[str] = dspy.InputField(desc="observations and thoughts that lead to the solution")
    concepts: Annotated[list[OEConcept], Len(1, 4)] = dspy.OutputField(desc="one to four situation/suggestion lessons")


class WritePseudocode(dspy.Signature):
    """Rewrite a solution as short high-level pseudocode.

    Name the operations (find objects, sort by a key, recolour, tile, draw lines, ...) and
    leave out implementation details such as index arithmetic and loops over cells. When
    the solution calls library primitives, state what each step does in plain words rather
    than the primitives' names."""

    solution: str = dspy.InputField(desc=_SOLUTION)
    pseudocode: str = dspy.OutputField(desc="a few numbered high-level steps")


class AbstractPSConcepts(dspy.Signature):
    """Record the concepts a solution uses in a library of reusable, typed problem-solving pieces.

    A concept is a type, a structure or a routine, with typed parameters and a typed
    output, so concepts can be composed. Prefer general, parameterised concepts, and
    routines that take other routines as parameters (e.g. a key or a predicate as a
    Callable), over specific ones. When an existing concept fits, revise it by reusing its
    exact title and adding what is new (parameters, relevance cues, implementation notes)
    rather than creating a near-duplicate. Implementation notes say how to build the idea
    from scratch: a later solver may not have the library primitives the solution calls.
    Return only new or revised concepts."""

    memory: str = dspy.InputField(desc="the existing concepts, compressed: title, kind, typed signature, cues")
    pseudocode: str = dspy.InputField(desc="the solution's high-level steps")
    solution: str = dspy.InputField(desc=_SOLUTION)
    concepts: Annotated[list[PSConcept], Len(1, 4)] = dspy.OutputField(desc="one to four new or revised concepts, one idea each")
