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
hypothesis), and a single string in place of either list raises ``TypeError`` (it would be
read as its characters), before any call. Demonstrations never repeat the memory: it is the same on every call and is
already in the prompt, so the memory fields of a demo (an optimizer's bootstrapped trace
holds them) are left out when the demo is shown.

``per_object=True`` (Experience-Transfer's task only) is the paper's y = sum_j l_j: the model
labels every object of the scene with one of the task's labels (``LabelObjects``, a bounded
output) and the count is computed in code (:mod:`.per_object`). The labels are the ones the
episodes carry unless ``labels`` is given; the counted label is the one the query names
unless ``count_label`` is given. The prediction holds ``count`` and ``objects`` (each object
with the background it is on, the memory entry it cites, and its label).

``retrieve_k=k`` (with ``per_object``) reads the scene into its objects first (``SceneObjects``,
one call) and labels each object in a call of its own (``LabelObject``) that sees only the k
memory entries nearest to the object (:func:`.per_object.nearest`), not the whole memory:
a small model matches an object against three rules far better than against sixteen.
Each object's record holds the entries it was shown.
"""

from __future__ import annotations

from typing import Any

import dspy
from dspy.signatures.signature import ensure_signature

from memreason.signatures import LabelObject, LabelObjects, ReasonWithMemory, SceneObjects, WithMemory

from .checks import texts
from .episodes import as_episodes
from .per_object import bounded, count_of, counted_label, nearest, task_labels
from .steps import Steps, arun, call, run

__all__ = ["MEMORY_FIELDS", "Reasoner", "memory_signature"]

MEMORY_FIELDS = ("episodes", "hypotheses")


class Reasoner(dspy.Module):
    """Answer a task from the memories given."""

    def __init__(
        self,
        *,
        episodic: bool = True,
        semantic: bool = True,
        cot: bool = False,
        signature: type[dspy.Signature] | str | None = None,
        per_object: bool = False,
        labels: list[str] | None = None,
        count_label: str | None = None,
        retrieve_k: int | None = None,
    ):
        """
        Args:
            episodic: read episodic memory (``episodes``: past observations).
            semantic: read semantic memory (``hypotheses``: rules drawn from experience).
            cot: think step by step before answering (``dspy.ChainOfThought``; adds ``reasoning``).
            signature: the task, as a ``dspy.Signature`` class or a string such as
                ``"question -> ripe: bool"``; ``None`` is Experience-Transfer's ``ReasonWithMemory``
                (``query``, ``scene`` -> ``count: int``), whose prompt is kept as it is.
            per_object: label each object of the scene and count in code (``LabelObjects``;
                Experience-Transfer's task only, so ``signature`` must be ``None``).
            labels: the labels an object may carry (per-object only; default: the episodes' labels).
            count_label: the label counted (per-object only; default: the one the query names).
            retrieve_k: label each object in its own call, against the ``retrieve_k`` memory entries
                nearest to it (per-object only; default ``None``: one call, the whole memory).
        """
        super().__init__()
        if not (episodic or semantic):
            raise ValueError("a Reasoner reads at least one memory: episodic, semantic or both")
        if per_object and signature is not None:
            raise ValueError("per_object answers Experience-Transfer's counting task; it takes no signature")
        if retrieve_k is not None and (
            not per_object or not isinstance(retrieve_k, int) or isinstance(retrieve_k, bool) or retrieve_k < 1
        ):
            raise ValueError(
                f"retrieve_k is a whole number >= 1 and needs per_object=True; got retrieve_k={retrieve_k!r}, "
                f"per_object={per_object!r}"
            )
        self.episodic, self.semantic, self.per_object = episodic, semantic, per_object
        self.labels, self.count_label = (list(labels) if labels else None), count_label
        self.retrieve_k = retrieve_k
        if per_object:
            task = LabelObject if self.retrieve_k else LabelObjects
            task = task.delete("hypotheses") if not semantic else task
            task = task.delete("episodes") if not episodic else task
            if self.retrieve_k:
                self.perceive = dspy.Predict(SceneObjects)
        else:
            task = memory_signature(signature, episodic=episodic, semantic=semantic)
        self.answer = dspy.ChainOfThought(task) if cot else dspy.Predict(task)

    def forward(self, *, episodes=None, hypotheses=None, **inputs: Any) -> dspy.Prediction:
        """The task's outputs; ``inputs`` are the signature's own input fields."""
        if self.retrieve_k:
            return run(self._object_by_object(episodes, hypotheses, inputs))
        if self.per_object:
            counted, inputs = self._per_object(episodes, inputs)
            return _counted(self.answer(**self._inputs(episodes, hypotheses, inputs)), counted)
        return self.answer(**self._inputs(episodes, hypotheses, inputs))

    async def aforward(self, *, episodes=None, hypotheses=None, **inputs: Any) -> dspy.Prediction:
        if self.retrieve_k:
            return await arun(self._object_by_object(episodes, hypotheses, inputs))
        if self.per_object:
            counted, inputs = self._per_object(episodes, inputs)
            return _counted(await self.answer.acall(**self._inputs(episodes, hypotheses, inputs)), counted)
        return await self.answer.acall(**self._inputs(episodes, hypotheses, inputs))

    def _per_object(self, episodes, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The label counted (checked before any call) and the inputs of ``LabelObjects``: labels in, query out, bounded."""
        labels = task_labels(as_episodes(episodes) if episodes is not None else None, self.labels)
        counted = counted_label(str(inputs.get("query", "")), labels, self.count_label)
        own = {k: v for k, v in inputs.items() if k != "query"}
        return counted, {**own, "labels": list(labels), "signature": bounded(self._predictor().signature, labels)}

    def _object_by_object(self, episodes, hypotheses, inputs: dict[str, Any]) -> Steps[dspy.Prediction]:
        """Read the scene into objects, label each against the memory nearest to it, count in code."""
        counted, inputs = self._per_object(episodes, inputs)
        memory = self._inputs(episodes, hypotheses, {})
        demos = memory.pop("demos")
        scene = yield call(self.perceive, scene=inputs.pop("scene"))
        objects = []
        for name in scene.objects:
            described = f"{name} on a {scene.background} background"
            shown = {field: nearest(entries, described, self.retrieve_k) for field, entries in memory.items()}
            out = yield call(self.answer, **shown, **inputs, object=described, demos=demos)
            cited = [_entry_text(e) for entries in shown.values() for e in entries]
            objects.append(
                {
                    "object_and_background": described,
                    "evidence": " | ".join(cited),
                    "label": out.label,
                    **({"reasoning": out.reasoning} if "reasoning" in out else {}),
                }
            )
        return dspy.Prediction(background=scene.background, objects=objects, count=sum(o["label"] == counted for o in objects))

    def _inputs(self, episodes, hypotheses, inputs: dict[str, Any]) -> dict[str, Any]:
        memory: dict[str, Any] = {}
        if self.episodic:
            memory["episodes"] = as_episodes(_given(episodes, "episodes", "episodic"))
        if self.semantic:
            memory["hypotheses"] = texts("hypotheses", _given(hypotheses, "hypotheses", "semantic"))
        return {**memory, **inputs, "demos": [_without_memory(d) for d in self._predictor().demos]}

    def _predictor(self) -> dspy.Predict:
        return self.answer.predict if isinstance(self.answer, dspy.ChainOfThought) else self.answer


def memory_signature(signature: type[dspy.Signature] | str | None, *, episodic: bool, semantic: bool) -> type[dspy.Signature]:
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


def _entry_text(entry) -> str:
    """A memory entry as an object's record shows it: a hypothesis as it is, an episode as its text and label."""
    if isinstance(entry, str):
        return entry
    observation = entry.observation if isinstance(entry.observation, str) else "(image)"
    return f"{observation} -> {entry.label}" if entry.label else observation


def _counted(out: dspy.Prediction, label: str) -> dspy.Prediction:
    """A per-object answer: the objects as the model labelled them, and how many carry ``label``."""
    count, objects = count_of(out.objects, label)
    extra = {"reasoning": out.reasoning} if "reasoning" in out else {}
    return dspy.Prediction(**extra, objects=objects, count=count)
