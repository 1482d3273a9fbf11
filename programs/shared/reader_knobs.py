"""The reader's knobs: how a memory program's per-query reader, its :class:`Reasoner`, reads memory.

The one definition of these knobs: every memory program takes them (``HDR(cot=False, per_object=True)``,
``build_program("episodic", retrieve_k=3)``), the registry says which programs do
(:attr:`ProgramSpec.reader_knobs`), and a command line reads their names from :data:`READER_KNOBS`::

    knobs = ReaderKnobs(cot=True, per_object=True, retrieve_k=3)
    reasoner = knobs.reasoner(episodic=True, semantic=True)
    READER_KNOBS == ("cot", "signature", "per_object", "retrieve_k")
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import dspy

from .reasoner import Reasoner

__all__ = ["READER_KNOBS", "ReaderKnobs"]


@dataclass(frozen=True)
class ReaderKnobs:
    """The knobs of a memory program's reader; each field's ``metadata["help"]`` is its one-line description.

    Attributes:
        cot: the reasoner thinks step by step before answering (``dspy.ChainOfThought``).
        signature: the task the reasoner answers, a ``dspy.Signature`` or a string such as
            ``"question -> ripe: bool"``; ``None`` is Experience-Transfer's counting task.
        per_object: the reasoner labels each object of the scene and the count is computed in code
            (Experience-Transfer's task only).
        retrieve_k: with ``per_object``, each object is labelled in a call of its own against the k
            memory entries nearest to it (``None``: one call, the whole memory).
    """

    cot: bool = field(default=False, metadata={"help": "think step by step before answering"})
    signature: type[dspy.Signature] | str | None = field(
        default=None, metadata={"help": "the task answered (default: Experience-Transfer's counting task)"}
    )
    per_object: bool = field(default=False, metadata={"help": "label each object and count in code"})
    retrieve_k: int | None = field(
        default=None, metadata={"help": "label each object against its k nearest memory entries (needs per_object)"}
    )

    def reasoner(self, *, episodic: bool, semantic: bool) -> Reasoner:
        """The :class:`Reasoner` these knobs describe, reading the memories named."""
        return Reasoner(
            episodic=episodic,
            semantic=semantic,
            cot=self.cot,
            signature=self.signature,
            per_object=self.per_object,
            retrieve_k=self.retrieve_k,
        )


READER_KNOBS: tuple[str, ...] = tuple(f.name for f in fields(ReaderKnobs))
