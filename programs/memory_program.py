"""The shape every HDR-style program shares: consolidate memory once, then answer queries from it.

    program.memorize(episodes, oracle_hypotheses)   # once per run: M_semantic = MC(M_episodic)
    program(query=..., scene=...)                   # per query:   y = R(T, M_episodic, M_semantic)
    await program.amemorize(...); await program.acall(...)      # the same, async
    program.save("p.json"); Program().load("p.json")            # the memory travels with the state

Subclasses decide what semantic memory is (nothing, the oracle rules, reflections,
verified hypotheses) by overriding :meth:`consolidate`: it returns the hypotheses, or a
``dspy.Prediction`` with ``hypotheses`` and a JSON-able ``record`` of how they were built;
an override that calls LMs may be a step function (:mod:`memreason.programs.steps`), which
``memorize`` and ``amemorize`` share (``amemorize`` runs a plain one's calls synchronously).
A program whose memory was never set (no ``memorize``, ``restore`` or ``load``) refuses to
answer.

What DSPy optimizers see: ``named_parameters()`` -- what an optimizer resets, gives demos
and rewrites the instructions of -- is the reasoner (the per-query step, the only one a
metric on answers can judge) and the memory. The consolidation's predictors run once per
memory, before any query, and an optimizer's examples (``query, scene -> count``) do not
fit them, so they are kept out of its reach: :meth:`consolidation_predictors` lists them,
and ``save``/``load`` and ``set_lm`` still cover them. Compiling a program after
``memorize`` therefore puts demos on the reasoner only.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import dspy

from memreason.signatures import Episode

from .episodes import as_episodes
from .experience_memory import ExperienceMemory
from .memory_parameter import fill_missing_memory
from .reasoner import Reasoner
from .steps import Steps, arun, as_steps, run

Consolidation = list[str] | dspy.Prediction  # the hypotheses, or Prediction(hypotheses=..., record={...})


class MemoryProgram(dspy.Module):
    """Answer queries from episodic and/or semantic memory."""

    def __init__(self, *, episodic: bool, semantic: bool, cot: bool = False,
                 signature: type[dspy.Signature] | str | None = None, per_object: bool = False,
                 retrieve_k: int | None = None):
        """
        Args:
            episodic: the reasoner reads the episodes.
            semantic: the reasoner reads the hypotheses (the semantic memory :meth:`consolidate` builds).
            cot: the reasoner thinks step by step before answering.
            signature: the task the reasoner answers (see :class:`Reasoner`); default Experience-Transfer's.
            per_object: the reasoner labels each object and the count is computed in code (see :class:`Reasoner`).
            retrieve_k: label each object against its k nearest memory entries (see :class:`Reasoner`).
        """
        super().__init__()
        self.reasoner = Reasoner(episodic=episodic, semantic=semantic, cot=cot, signature=signature, per_object=per_object, retrieve_k=retrieve_k)
        self.memory = ExperienceMemory()

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
        episodes = as_episodes(episodes)
        out = yield from as_steps(self.consolidate(episodes, list(oracle_hypotheses)))
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

    def consolidate(self, episodes: list[Episode],
                    oracle_hypotheses: list[str]) -> Steps[Consolidation] | Consolidation:
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
            raise ValueError(f"{type(self).__name__} has no memory: call memorize(episodes) first "
                             "(or restore(episodes, record), or load(path) of a program saved with its memory)")
        return self.memory.recall()

    # -- what optimizers see, and what is saved --------------------------------------------

    def named_parameters(self) -> list[tuple[str, Any]]:
        """The reasoner's predictors and the memory (the consolidation's predictors are left out)."""
        return [(name, p) for name, p in super().named_parameters() if not _consolidates(name, p)]

    def consolidation_predictors(self) -> list[tuple[str, dspy.Predict]]:
        """The predictors that build the memory (``memorize`` runs them), by name."""
        return [(name, p) for name, p in super().named_parameters() if _consolidates(name, p)]

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        state = super().dump_state(json_mode=json_mode)
        return {**state, **self.consolidation_state(json_mode=json_mode)}

    def load_state(self, state: dict[str, Any], *, allow_unsafe_lm_state: bool = False) -> "MemoryProgram":
        """Load a whole program's state, or a consolidator's alone (one holding no reasoner predictor,
        as ``python -m optimize compile consolidator`` writes): that fits whatever the reasoner's knobs."""
        if _consolidation_only(self, state):
            return self._load_consolidation(state, allow_unsafe_lm_state=allow_unsafe_lm_state)
        _check_reasoner_fits(self, state)
        super().load_state(fill_missing_memory(self, state), allow_unsafe_lm_state=allow_unsafe_lm_state)
        for name, predictor in self.consolidation_predictors():
            if name in state:
                predictor.load_state(state[name], allow_unsafe_lm_state=allow_unsafe_lm_state)
        return self

    def load_consolidation(self, path: str) -> "MemoryProgram":
        """Take the consolidation's predictors (demos, instructions) from a state ``save`` wrote; the reasoner and
        the memory stay as they are, so a compiled consolidator fits a program whatever its reasoner's knobs."""
        with open(path) as handle:
            return self._load_consolidation(json.load(handle), source=path)

    def consolidation_state(self, json_mode: bool = True) -> dict[str, Any]:
        """The consolidation's predictors' state alone: what ``load`` and ``load_consolidation`` take into any
        program of this kind, whatever its reasoner's knobs (its memory is not part of it)."""
        return {name: p.dump_state(json_mode=json_mode) for name, p in self.consolidation_predictors()}

    def _load_consolidation(self, state: dict[str, Any], *, source: str = "the state",
                            allow_unsafe_lm_state: bool = False) -> "MemoryProgram":
        predictors = self.consolidation_predictors()
        if not any(name in state for name, _ in predictors):
            raise ValueError(f"{source} holds no predictor of {type(self).__name__}'s consolidation")
        foreign = sorted(set(state) - {name for name, _ in predictors} - {"memory", "metadata"}
                         - {name for name in state if name.startswith("reasoner.")})
        if foreign:  # another program's consolidator: loading the names that match would drop the rest silently
            raise ValueError(f"{source} holds {', '.join(foreign)}, which {type(self).__name__}'s consolidation does not have")
        for name, predictor in predictors:
            if name in state:
                predictor.load_state(state[name], allow_unsafe_lm_state=allow_unsafe_lm_state)
        return self

    def set_lm(self, lm) -> None:
        super().set_lm(lm)
        for _, predictor in self.consolidation_predictors():
            predictor.lm = lm


def _check_reasoner_fits(program: MemoryProgram, state: dict[str, Any]) -> None:
    """Raise ``ValueError`` unless ``state`` holds every reasoner predictor of ``program`` with the same fields.

    DSPy loads a predictor's saved field texts by position, so a state saved with other reader
    knobs (``per_object``, ``retrieve_k``) would put one signature's texts on another's fields.
    """
    hint = ("it was saved from a program with other reader knobs (per_object, retrieve_k); build the program with "
            "the knobs it was saved with, or take its consolidator alone with load_consolidation(path)")
    for name, predictor in program.named_predictors():
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


def _consolidates(name: str, parameter: Any) -> bool:
    return isinstance(parameter, dspy.Predict) and not name.startswith("reasoner.")
