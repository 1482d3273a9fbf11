"""The per-object reader of checked rules: each object is given the rules that apply to it, matched in code.

    background, objects = SceneObjects(scene)                         # one call, as the retrieval reader
    for each object o:  d = "<o> on a <background> background"
        a = object_attributes(o, background, values)                  # in code, by the episodes' values
        rules(o) = apply_rules(checked rules, a)                      # Rule.matches: the check's own matcher
        label(o) = LabelObjectByRules(nearest(episodes, d, k), rules(o), labels, d)
    count = |{o : label(o) = the counted label}|

The retrieval reader (:class:`memreason.programs.shared.reasoner.Reasoner` with ``retrieve_k``)
shows each object the rules nearest to its description by shared words, so a rule about
the object's background can outrank the one about its shape and colour, and a rule general
enough to reach an unseen combination may not be among the nearest. This reader shows the
rules whose conditions the object meets, as the check matched them to the episodes, in
precedence order (exceptions before the general rules they override; overridden rules are
left out: :func:`.rule_application.apply_rules`), and the k episodes nearest to it as
before. An object no checked rule speaks of is shown no rule. Each object's record holds
the attributes read, the rules shown and overridden, the label precedence gives, and
whether rules as specific as each other disagreed on it (``conflict``).

Its predictors are the retrieval reader's (``perceive``, ``answer``, with the same fields),
so a state saved from one loads into the other. Called without ``rules`` it is the retrieval
reader.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import dspy

from memreason.signatures import LabelObjectByRules

from ..shared.per_object import nearest
from ..shared.reasoner import Reasoner
from ..shared.steps import Steps, arun, call, run
from .rule_application import apply_rules, object_attributes
from .rule_check import LabelledEpisode, Rule, vocabulary

__all__ = ["RuleReader", "reader_of_rules", "recall_with_rules", "rules_in_record"]


class RuleReader(Reasoner):
    """Label each object against the checked rules that apply to it and its nearest episodes; count in code."""

    def __init__(self, *, episodic: bool = True, semantic: bool = True, cot: bool = False, retrieve_k: int = 3, **config):
        """
        Args:
            episodic: show each object its ``retrieve_k`` nearest episodes.
            semantic: show each object the checked rules that apply to it.
            cot: think step by step before answering.
            retrieve_k: how many episodes each object is shown (a whole number >= 1).
            **config: the other arguments of :class:`Reasoner` (``labels``, ``count_label``).
        """
        super().__init__(episodic=episodic, semantic=semantic, cot=cot, per_object=True, retrieve_k=retrieve_k, **config)
        task = LabelObjectByRules
        task = task.delete("hypotheses") if not semantic else task
        task = task.delete("episodes") if not episodic else task
        self.answer = dspy.ChainOfThought(task) if cot else dspy.Predict(task)

    def forward(self, *, episodes=None, hypotheses=None, rules=None, values=None, **inputs: Any) -> dspy.Prediction:
        """``rules`` (checked :class:`Rule` objects) and ``values`` (attribute -> the values the episodes show) given:
        the rules applied per object; without them, the retrieval reader."""
        if rules is None:
            return super().forward(episodes=episodes, hypotheses=hypotheses, **inputs)
        return run(self._by_rules(episodes, hypotheses, rules, values or {}, inputs))

    async def aforward(self, *, episodes=None, hypotheses=None, rules=None, values=None, **inputs: Any) -> dspy.Prediction:
        if rules is None:
            return await super().aforward(episodes=episodes, hypotheses=hypotheses, **inputs)
        return await arun(self._by_rules(episodes, hypotheses, rules, values or {}, inputs))

    def _by_rules(
        self, episodes, hypotheses, rules: Sequence[Rule], values: Mapping[str, Sequence[str]], inputs: dict[str, Any]
    ) -> Steps[dspy.Prediction]:
        counted, inputs = self._per_object(episodes, inputs)
        memory = self._inputs(episodes, hypotheses, {})
        demos = memory.pop("demos")
        scene = yield call(self.perceive, scene=inputs.pop("scene"))
        objects = []
        for name in scene.objects:
            described = f"{name} on a {scene.background} background"
            attributes = object_attributes(name, scene.background, values)
            applied = apply_rules(rules, attributes)
            shown: dict[str, list] = {}
            if "episodes" in memory:
                shown["episodes"] = nearest(memory["episodes"], described, self.retrieve_k)
            if "hypotheses" in memory:
                shown["hypotheses"] = [r.statement() for r in applied.rules]
            out = yield call(self.answer, **shown, **inputs, object=described, demos=demos)
            cited = [*shown.get("hypotheses", []), *(_episode_text(e) for e in shown.get("episodes", []))]
            objects.append(
                {
                    "object_and_background": described,
                    "evidence": " | ".join(cited),
                    "label": out.label,
                    "attributes": attributes,
                    "rules": applied.as_dict(),
                    **({"reasoning": out.reasoning} if "reasoning" in out else {}),
                }
            )
        return dspy.Prediction(background=scene.background, objects=objects, count=sum(o["label"] == counted for o in objects))


def reader_of_rules(reasoner: Reasoner) -> Reasoner:
    """A :class:`RuleReader` with ``reasoner``'s knobs where it labels objects one by one (``retrieve_k``); else
    ``reasoner`` itself (one call for a whole scene already sees every rule)."""
    if not reasoner.retrieve_k:
        return reasoner
    return RuleReader(
        episodic=reasoner.episodic,
        semantic=reasoner.semantic,
        cot=isinstance(reasoner.answer, dspy.ChainOfThought),
        retrieve_k=reasoner.retrieve_k,
        labels=reasoner.labels,
        count_label=reasoner.count_label,
    )


def recall_with_rules(memory: dict[str, Any], reasoner: Reasoner, record: Mapping[str, Any]) -> dict[str, Any]:
    """A memory program's recall (``episodes``, ``hypotheses``), with the checked rules and values for a RuleReader."""
    if isinstance(reasoner, RuleReader):
        rules, values = rules_in_record(record)
        return {**memory, "rules": rules, "values": values}
    return memory


def rules_in_record(record: Mapping[str, Any]) -> tuple[list[Rule], dict[str, list[str]]]:
    """The checked rules a memory record keeps (``rules``) and the values its episodes show (``attributes``)."""
    rules = [Rule.of(r["conditions"], r["label"], r.get("sentence", "")) for r in record.get("rules", [])]
    labelled = [
        LabelledEpisode(i, {k: str(v) for k, v in a.items() if k != "label"}, str(a.get("label", "")))
        for i, a in enumerate(record.get("attributes", []))
    ]
    return rules, vocabulary(labelled)


def _episode_text(entry) -> str:
    observation = entry.observation if isinstance(entry.observation, str) else "(image)"
    return f"{observation} -> {entry.label}" if entry.label else observation
