"""The reasoning module R of the HDR paper: answer a task from episodic and/or semantic memory.

    y = R(T, M_episodic, M_semantic)

Which memories it reads, whether it thinks step by step first (CoT), and the task it
answers are constructor arguments. By default the task is Experience-Transfer's
(``ReasonWithMemory``: query and scene in, ``count: int`` out); any other signature gets
the memory fields it reads put before its own inputs (and, when it has no instructions of
its own, the task-neutral ones of ``WithMemory``). The signature keeps only the memory
fields the reasoner reads.

A reader of memory must be given it: ``episodes=None`` or ``hypotheses=None`` for a memory
it reads raises ``ValueError`` (an empty list is a memory: a consolidation may keep no
hypothesis). Demonstrations never repeat the memory: it is the same on every call and is
already in the prompt, so the memory fields of a demo (an optimizer's bootstrapped trace
holds them) are left out when the demo is shown.
"""

from __future__ import annotations

from typing import Any

import dspy
from dspy.signatures.signature import ensure_signature

from memreason.signatures import ReasonWithMemory, WithMemory

from .episodes import as_episodes

MEMORY_FIELDS = ("episodes", "hypotheses")


class Reasoner(dspy.Module):
    """Answer a task from the memories given."""

    def __init__(self, *, episodic: bool = True, semantic: bool = True, cot: bool = False,
                 signature: type[dspy.Signature] | str | None = None):
        """
        Args:
            episodic: read episodic memory (``episodes``: past observations).
            semantic: read semantic memory (``hypotheses``: rules drawn from experience).
            cot: think step by step before answering (``dspy.ChainOfThought``; adds ``reasoning``).
            signature: the task, as a ``dspy.Signature`` class or a string such as
                ``"question -> ripe: bool"``; ``None`` is Experience-Transfer's ``ReasonWithMemory``
                (``query``, ``scene`` -> ``count: int``), whose prompt is kept as it is.
        """
        super().__init__()
        if not (episodic or semantic):
            raise ValueError("a Reasoner reads at least one memory: episodic, semantic or both")
        self.episodic, self.semantic = episodic, semantic
        task = memory_signature(signature, episodic=episodic, semantic=semantic)
        self.answer = dspy.ChainOfThought(task) if cot else dspy.Predict(task)

    def forward(self, *, episodes=None, hypotheses=None, **inputs: Any) -> dspy.Prediction:
        """The task's outputs; ``inputs`` are the signature's own input fields."""
        return self.answer(**self._inputs(episodes, hypotheses, inputs))

    async def aforward(self, *, episodes=None, hypotheses=None, **inputs: Any) -> dspy.Prediction:
        return await self.answer.acall(**self._inputs(episodes, hypotheses, inputs))

    def _inputs(self, episodes, hypotheses, inputs: dict[str, Any]) -> dict[str, Any]:
        memory: dict[str, Any] = {}
        if self.episodic:
            memory["episodes"] = as_episodes(_given(episodes, "episodes", "episodic"))
        if self.semantic:
            memory["hypotheses"] = list(_given(hypotheses, "hypotheses", "semantic"))
        return {**memory, **inputs, "demos": [_without_memory(d) for d in self._predictor().demos]}

    def _predictor(self) -> dspy.Predict:
        return self.answer.predict if isinstance(self.answer, dspy.ChainOfThought) else self.answer


def memory_signature(signature: type[dspy.Signature] | str | None, *, episodic: bool,
                     semantic: bool) -> type[dspy.Signature]:
    """``signature`` (default ``ReasonWithMemory``) with exactly the memory fields read, first among the inputs."""
    if signature is None:
        task = ReasonWithMemory
    else:
        task = ensure_signature(signature)
        if task.instructions == dspy.Signature(dict(task.fields)).instructions:  # DSPy's generic default
            task = task.with_instructions(WithMemory.instructions)
        for name in reversed(MEMORY_FIELDS):
            if name not in task.input_fields:
                field = WithMemory.input_fields[name]
                task = task.prepend(name, field, type_=field.annotation)
    if not episodic:
        task = task.delete("episodes")
    if not semantic:
        task = task.delete("hypotheses")
    return task


def _given(value, name: str, kind: str):
    if value is None:
        raise ValueError(f"this Reasoner reads {kind} memory: pass {name}=[...] (an empty list is a memory, None is not)")
    return value


def _without_memory(demo):
    if not any(name in demo for name in MEMORY_FIELDS):
        return demo
    if isinstance(demo, dspy.Example):
        return demo.without(*(name for name in MEMORY_FIELDS if name in demo))
    return {k: v for k, v in demo.items() if k not in MEMORY_FIELDS}
