"""What a built memory's concepts are made of: checks of an abstraction that read the memory, not the model.

    concept_quality(memory, primitives=dsl_primitives())
    # {"concepts": 40, "copied_from_demos": 0, "near_copies_of_demos": 5, "naming_dsl_primitives": 31}

- ``copied_from_demos``: concepts that repeat the abstractor's demonstration instead of the solution
  (an OE concept with the demonstration's situation; a PS concept with a demonstration concept's title
  and first note). A small model tends to copy the one example it is shown; abstraction now drops such
  copies as it writes, so this counts them in memories built before it did.
- ``near_copies_of_demos``: concepts that repeat the demonstration's wording though not exactly, which the
  abstraction's drop lets through (copies included): an OE concept whose situation is nearly a demonstration
  situation (a similarity ratio of at least 0.8, e.g. one word left out) or whose suggestion is one word for
  word; a PS concept that keeps one of a demonstration concept's implementation notes word for word.
- ``naming_dsl_primitives`` (solutions in a DSL only, e.g. re-ARC's verifiers): PS concepts titled by a
  primitive's name (``palette``, ``fill``), OE concepts that call or quote one (``ofcolor(``, `` `fill` ``):
  the program restated rather than the idea behind it abstracted.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from difflib import SequenceMatcher
from typing import Any

from memreason.programs.arcmemo.abstraction_demos import OE_CONCEPTS, PS_CONCEPTS
from memreason.programs.arcmemo.concept_abstractor import repeats_demonstration
from memreason.programs.arcmemo.concept_memory import ConceptMemory
from memreason.programs.shared.normalise import normalise

__all__ = ["concept_quality"]


def _plain(text: str) -> str:
    return " ".join(text.lower().split())


def _copied(concept: Any, format: str) -> bool:
    return any(repeats_demonstration(concept, demo, format) for demo in (OE_CONCEPTS if format == "oe" else PS_CONCEPTS))


NEAR = 0.8  # similarity ratio (difflib) from which a situation counts as the demonstration's, reworded
# The demonstrations' wording, compared once per concept. A copy is a near copy by these keys too: its
# situation has ratio 1, its first note is a demonstration note (every PS demonstration concept has one).
_DEMO_SITUATIONS = [normalise(demo.situation) for demo in OE_CONCEPTS]
_DEMO_SUGGESTIONS = {normalise(demo.suggestion) for demo in OE_CONCEPTS}
_DEMO_NOTES = {normalise(note) for demo in PS_CONCEPTS for note in demo.implementation_notes}


def _near_copy(concept: Any, format: str) -> bool:
    if format == "oe":
        situation = normalise(concept.situation)
        return normalise(concept.suggestion) in _DEMO_SUGGESTIONS or any(
            SequenceMatcher(None, situation, demo).ratio() >= NEAR for demo in _DEMO_SITUATIONS
        )
    return any(normalise(note) in _DEMO_NOTES for note in concept.implementation_notes)


def _names_primitive(concept: Any, format: str, primitives: Collection[str]) -> bool:
    if format == "ps":
        return _plain(concept.title).strip("`()") in primitives
    text = f"{concept.situation} {concept.suggestion}"
    named = re.findall(r"`(\w+)`|\b(\w+)\(", text)
    return any((quoted or called) in primitives for quoted, called in named)


def concept_quality(memory: ConceptMemory, primitives: Collection[str] = ()) -> dict[str, int]:
    """``concepts``, ``copied_from_demos``, ``near_copies_of_demos`` and, where ``primitives`` are given,
    ``naming_dsl_primitives``."""
    concepts = [entry.concept for entry in memory.entries]
    quality = {
        "concepts": len(concepts),
        "copied_from_demos": sum(_copied(c, memory.format) for c in concepts),
        "near_copies_of_demos": sum(_near_copy(c, memory.format) for c in concepts),
    }
    if primitives:
        quality["naming_dsl_primitives"] = sum(_names_primitive(c, memory.format, set(primitives)) for c in concepts)
    return quality
