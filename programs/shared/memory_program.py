"""The shape every HDR-style program shares: consolidate memory once, then answer queries from it.

    program.memorize(episodes, oracle_hypotheses)   # once per run: M_semantic = MC(M_episodic)
    program(query=..., scene=...)                   # per query:   y = R(T, M_episodic, M_semantic)
    await program.amemorize(...); await program.acall(...)      # the same, async
    program.save("p.json"); Program().load("p.json")            # the memory travels with the state

Subclasses decide what semantic memory is (nothing, the oracle rules, reflections,
verified hypotheses) by overriding :meth:`consolidate`: it returns the hypotheses, or a
``dspy.Prediction`` with ``hypotheses`` and a JSON-able ``record`` of how they were built;
an override that calls LMs may be a step function (:mod:`memreason.programs.shared.steps`), which
``memorize`` and ``amemorize`` share (``amemorize`` runs a plain one's calls synchronously).
A program whose memory was never set (no ``memorize``, ``restore`` or ``load``) refuses to
answer.

Which memories the reasoner reads is the subclass's (``episodic``, ``semantic``); how it
reads them is the user's, through the reader's knobs (:class:`ReaderKnobs`: ``cot``,
``signature``, ``per_object``, ``retrieve_k``), which every memory program takes. A subclass
that builds its memory with LMs builds those modules, its memory writers, after
``super().__init__``.

What DSPy optimizers see: ``named_parameters()`` -- what an optimizer resets, gives demos
and rewrites the instructions of -- is the reasoner (the per-query step, the only one a
metric on answers can judge) and the memory. The consolidation's predictors run once per
memory, before any query, and an optimizer's examples (``query, scene -> count``) do not
fit them, so with ``freeze_memory_writers`` (the default) they are kept out of its reach
(:mod:`memreason.programs.shared.memory_writers`: every sub-module but the reasoner is
frozen as DSPy freezes a compiled one): :meth:`consolidation_predictors` lists them, and
``save``/``load`` and ``set_lm`` still cover them. Compiling a program after ``memorize``
therefore puts demos on the reasoner only.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Sequence

import dspy

from memreason.signatures import Episode

from .checks import some_episodes, texts
from .episodes import as_episodes
from .experience_memory import ExperienceMemory
from .memory_writers import MemoryWriters
from .reader_knobs import READER_KNOBS, ReaderKnobs
from .steps import Steps, arun, as_steps, run

__all__ = ["Consolidation", "MemoryProgram"]

Consolidation = list[str] | dspy.Prediction  # the hypotheses, or Prediction(hypotheses=..., record={...})


class MemoryProgram(MemoryWriters, dspy.Module):
    """Answer queries from episodic and/or semantic memory."""

    episodic: ClassVar[bool] = True  # the reasoner reads the episodes
    semantic: ClassVar[bool] = True  # the reasoner reads the hypotheses (the semantic memory consolidate builds)
    default_cot: ClassVar[bool] = False  # the reasoner thinks step by step unless told otherwise (cot=...)

    def __init__(self, *, freeze_memory_writers: bool = True, **reader_knobs: Any):
        """
        Args:
            freeze_memory_writers: keep the modules that build the memory (every sub-module but the reasoner)
                out of optimizers' reach; ``save``, ``load`` and ``set_lm`` still cover them (see the module docs).
            **reader_knobs: how the reasoner reads the memory, :class:`ReaderKnobs`: ``cot`` (default: the
                program's ``default_cot``), ``signature``, ``per_object``, ``retrieve_k``.
        """
        super().__init__()
        unknown = sorted(set(reader_knobs) - set(READER_KNOBS))
        if unknown:
            raise TypeError(
                f"{type(self).__name__} has no knob {', '.join(map(repr, unknown))}; "
                f"its reader's knobs are {', '.join(READER_KNOBS)}"
            )
        self.freeze_memory_writers = freeze_memory_writers
        knobs = ReaderKnobs(**{"cot": self.default_cot, **reader_knobs})
        self.reasoner = knobs.reasoner(episodic=self.episodic, semantic=self.semantic)
        self.memory = ExperienceMemory()

    def is_memory_writer(self, name: str) -> bool:
        """Every sub-module but the reasoner builds the memory."""
        return name != "reasoner"

    @property
    def episodes(self) -> list[Episode] | None:
        return self.memory.episodes

    @property
    def hypotheses(self) -> list[str] | None:
        return self.memory.hypotheses

    # -- building the memory -------------------------------------------------------------

    def memorize(self, episodes: Sequence, oracle_hypotheses: Sequence[str] = ()) -> dict[str, Any]:
        """Store the episodes, consolidate semantic memory, and return it as a JSON-able record."""
        return run(self._memorize(episodes, oracle_hypotheses))

    async def amemorize(self, episodes: Sequence, oracle_hypotheses: Sequence[str] = ()) -> dict[str, Any]:
        """:meth:`memorize`, with the consolidation's modules called through ``acall``."""
        return await arun(self._memorize(episodes, oracle_hypotheses))

    def _memorize(self, episodes: Sequence, oracle_hypotheses: Sequence[str]) -> Steps[dict[str, Any]]:
        episodes, oracle_hypotheses = as_episodes(episodes), texts("oracle_hypotheses", oracle_hypotheses)
        some_episodes(episodes, f"{type(self).__name__}.memorize")  # before any LM call
        out = yield from as_steps(self.consolidate(episodes, oracle_hypotheses))
        if isinstance(out, dspy.Prediction):
            self.memory.set(episodes, out.hypotheses, out.get("record"))
        else:
            self.memory.set(episodes, out)
        return self.memory_record()

    def restore(self, episodes: Sequence, record: dict[str, Any]) -> None:
        """Take back the memory a :meth:`memorize` call returned as ``record``, without any LM call.

        A resumed run uses the saved snapshot instead of consolidating again (which costs
        calls and, at a temperature above zero, could build a different memory).
        """
        self.memory.set(episodes, record.get("hypotheses", []), {k: v for k, v in record.items() if k != "hypotheses"})

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation] | Consolidation:
        """The semantic memory built from ``episodes`` (see the module docs); none by default."""
        return []

    def memory_record(self) -> dict[str, Any]:
        return {"hypotheses": list(self.hypotheses or []), **self.memory.consolidation}

    # -- answering ------------------------------------------------------------------------

    def forward(self, **inputs: Any) -> dspy.Prediction:
        """The reasoner's answer to ``inputs`` (Experience-Transfer: ``query``, ``scene``) from the memory."""
        return self.reasoner(**self._recall(), **inputs)

    async def aforward(self, **inputs: Any) -> dspy.Prediction:
        return await self.reasoner.acall(**self._recall(), **inputs)

    def _recall(self) -> dict[str, Any]:
        if not self.memory.is_set:
            raise ValueError(
                f"{type(self).__name__} has no memory: call memorize(episodes) first "
                "(or restore(episodes, record), or load(path) of a program saved with its memory)"
            )
        return self.memory.recall()

    # -- what optimizers see, and what is saved --------------------------------------------

    def consolidation_predictors(self) -> list[tuple[str, dspy.Predict]]:
        """The predictors that build the memory (``memorize`` runs them), by name, frozen or not."""
        return self.memory_writer_predictors()

    def load_state(self, state: dict[str, Any], *, allow_unsafe_lm_state: bool = False) -> "MemoryProgram":
        """Load a whole program's state, or a consolidator's alone (one holding no reasoner predictor,
        as ``python -m optimize compile consolidator`` writes): that fits whatever the reasoner's knobs."""
        if _consolidation_only(self, state):
            return self._load_consolidation(state, allow_unsafe_lm_state=allow_unsafe_lm_state)
        _check_reasoner_fits(self, state)
        return super().load_state(state, allow_unsafe_lm_state=allow_unsafe_lm_state)

    def load_consolidation(self, path: str) -> "MemoryProgram":
        """Take the consolidation's predictors (demos, instructions) from a state ``save`` wrote; the reasoner and
        the memory stay as they are, so a compiled consolidator fits a program whatever its reasoner's knobs."""
        with open(path) as handle:
            return self._load_consolidation(json.load(handle), source=path)

    def consolidation_state(self, json_mode: bool = True) -> dict[str, Any]:
        """The consolidation's predictors' state alone (without their LM): what ``load`` and ``load_consolidation``
        take into any program of this kind, whatever its reasoner's knobs (its memory is not part of it)."""
        return self.memory_writers_state(json_mode=json_mode)

    def _load_consolidation(
        self, state: dict[str, Any], *, source: str = "the state", allow_unsafe_lm_state: bool = False
    ) -> "MemoryProgram":
        predictors = self.consolidation_predictors()
        if not any(name in state for name, _ in predictors):
            raise ValueError(f"{source} holds no predictor of {type(self).__name__}'s consolidation")
        foreign = sorted(
            set(state)
            - {name for name, _ in predictors}
            - {"memory", "metadata"}
            - {name for name in state if name.startswith("reasoner.")}
        )
        if foreign:  # another program's consolidator: loading the names that match would drop the rest silently
            raise ValueError(f"{source} holds {', '.join(foreign)}, which {type(self).__name__}'s consolidation does not have")
        self.load_memory_writers(state, allow_unsafe_lm_state=allow_unsafe_lm_state)
        return self


def _check_reasoner_fits(program: MemoryProgram, state: dict[str, Any]) -> None:
    """Raise ``ValueError`` unless ``state`` holds every reasoner predictor of ``program`` with the same fields.

    DSPy loads a predictor's saved field texts by position, so a state saved with other reader
    knobs (``per_object``, ``retrieve_k``) would put one signature's texts on another's fields.
    """
    hint = (
        "it was saved from a program with other reader knobs (per_object, retrieve_k); build the program with "
        "the knobs it was saved with, or take its consolidator alone with load_consolidation(path)"
    )
    for name, predictor in program.named_predictors():
        if not name.startswith("reasoner."):
            continue
        if name not in state:
            raise ValueError(f"the state holds no {name}: {hint}")
        saved = [field.get("prefix") for field in state[name].get("signature", {}).get("fields", [])]
        expected = [field.json_schema_extra["prefix"] for field in predictor.signature.fields.values()]
        if saved != expected:
            raise ValueError(f"the state's {name} has the fields {saved}, this program's {expected}: {hint}")


def _consolidation_only(program: MemoryProgram, state: dict[str, Any]) -> bool:
    """Whether ``state`` is a consolidator's alone: some consolidation predictor, no reasoner predictor."""
    consolidation = {name for name, _ in program.consolidation_predictors()}
    return bool(consolidation & set(state)) and not any(name.startswith("reasoner.") for name in state)
