"""A symbolic rule learner (``rule_learner``): a reference row beside HDR, not HDR. No LM builds its memory.

    candidates <- every conjunction of attribute = value over any subset of the attributes (one value
                  each; the empty conjunction too), with every label, that matches some episode and
                  whose every matched episode carries that label
    rules <- [], open <- every distinct attribute combination the episodes show
    while some candidate matches an open combination:
        take the candidate that matches the most open combinations; ties: the fewest conditions,
        then the first in enumeration order (attribute subsets by size, the attributes in the
        episodes' order; values and labels in the order the episodes first show them)
        rules += it; open -= what it matches
    M_semantic <- the statements of rules                            # as hdr_grounded's reader reads them
    y = R(T, M_episodic, M_semantic)                                 # per scene, as in HDR: an LM reads

A greedy set cover (Chvatal's): it finds few rules, not always the fewest. Among rules
that explain as much, it prefers the general one (fewer conditions), and a general rule
speaks of combinations no episode shows: at Level 3, "objects with color red and background
black are labelled normal" reaches a masked red square on black. Combinations the episodes
show with two labels match no candidate and stay unexplained.

The rules are the :class:`.rule_check.Rule` type ``hdr_grounded`` builds, so the record
(``rules``, each with its coverage) is read by the same reader, shown by ``show`` the same
way, and scored exactly by ``score_rules``. The episodes must carry their attributes (text
modality): there is no perception call.
"""

from __future__ import annotations

from itertools import combinations, product
from typing import Any, Sequence

import dspy

from memreason.signatures import Episode

from ..registry import SCENES, register_program
from ..shared.memory_program import Consolidation, MemoryProgram
from .rule_check import Check, LabelledEpisode, Rule, check, unexplained, vocabulary
from .rule_reader import reader_of_rules, recall_with_rules

__all__ = ["RuleLearner", "learn_rules"]


@register_program
class RuleLearner(MemoryProgram):
    """Answer from the episodes and the fewest general rules consistent with every episode, found without an LM."""

    name = "rule_learner"
    kind = SCENES
    needs_attributes = True  # learns from the episodes' attributes; text modality only
    summary = (
        "episodes and the fewest general rules consistent with every episode, found by a greedy set cover "
        "with no LM (knob: cot); a reference row, not HDR; text modality only"
    )

    default_cot = True

    def __init__(self, *, apply_rules: bool = False, **knobs: Any):
        """
        Args:
            apply_rules: with ``per_object`` and ``retrieve_k``, show each object the rules that apply to it, matched
                in code (:class:`.rule_reader.RuleReader`), instead of the rules nearest to it by words (off by
                default: the reference row as measured).
            **knobs: the reader's knobs (``cot``, default True here, ``signature``, ``per_object``, ``retrieve_k``)
                and ``freeze_memory_writers``.
        """
        super().__init__(**knobs)
        if apply_rules:
            self.reasoner = reader_of_rules(self.reasoner)

    def _recall(self) -> dict[str, Any]:
        return recall_with_rules(super()._recall(), self.reasoner, self.memory.consolidation)

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Consolidation:
        undescribed = [i for i, e in enumerate(episodes) if e.attributes is None]
        if undescribed:
            raise ValueError(
                f"the rule learner reads the episodes' attributes; episode(s) {undescribed[:5]} have none "
                "(it perceives nothing: give episodes with attributes, i.e. text modality)"
            )
        unlabelled = [i for i, e in enumerate(episodes) if not e.label]
        if unlabelled:
            raise ValueError(f"the rule learner learns from labels; episode(s) {unlabelled[:5]} have none")
        observations = [
            LabelledEpisode(i, {str(k): str(v) for k, v in e.attributes.items()}, e.label) for i, e in enumerate(episodes)
        ]
        checks = learn_rules(observations)
        left = unexplained([c.rule for c in checks], observations)
        record = {
            "learner": "greedy set cover over consistent conjunctions (no LM)",
            "attributes": [o.as_dict() for o in observations],
            "rules": [c.as_dict() for c in checks],
            "unexplained": [o.index for o in left],
            "explained_all": not left,
        }
        return dspy.Prediction(hypotheses=[c.rule.statement() for c in checks], record=record)


def learn_rules(labelled: Sequence[LabelledEpisode]) -> list[Check]:
    """The rules the greedy cover chooses (see the module docs), in the order chosen, each with its check."""
    values = vocabulary(labelled)
    labels = list(dict.fromkeys(o.label for o in labelled))
    keys = [tuple(sorted(o.attributes.items())) for o in labelled]
    consistent: list[tuple[Check, frozenset[tuple]]] = []
    for size in range(len(values) + 1):
        for attrs in combinations(values, size):
            for chosen in product(*(values[a] for a in attrs)):
                for label in labels:
                    result = check(Rule.of({a: [v] for a, v in zip(attrs, chosen)}, label), labelled)
                    if result.accepted:
                        consistent.append((result, frozenset(keys[i] for i in result.coverage)))
    open_ = set(keys)
    chosen_rules: list[Check] = []
    while True:
        best = max(
            consistent,
            key=lambda c: (len(c[1] & open_), -len(c[0].rule.conditions)),
            default=None,
        )  # max keeps the first of equals: enumeration order breaks the last ties
        if best is None or not best[1] & open_:
            return chosen_rules
        chosen_rules.append(best[0])
        open_ -= best[1]
