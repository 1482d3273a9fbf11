"""The most general rule the episodes allow (``hdr_grounded``): generalise a checked rule, repair a refuted one.

    general  = generalise(rule, labelled)      # drop whole conditions while no episode contradicts it
    repaired = repair(rule, labelled)          # a refuted rule plus the one condition that removes its counterexamples
    specific_first(a, b) / entails(a, b)       # which of two rules is the more specific

A version-space view with an Occam preference. Among the rules no episode contradicts, the
one conditioning on the fewest attributes reaches furthest: at Level 3 it is the only kind
that speaks of a combination no episode shows ("objects with color red and shape square are
labelled anomaly" reaches a red square on the hidden background). So:

- :func:`generalise` takes a rule that passed the check and tries every subset of its
  conditions (whole attributes dropped, each kept attribute with its values as written),
  keeping those that still pass; it returns the one with the fewest conditions, then the
  most episodes matched, then the one whose kept attributes come first in the episodes. A
  rule with nothing to drop comes back as it was.
- :func:`repair` specialises a refuted rule by one attribute, as a rule learner's
  specialisation step does: for each attribute the rule leaves free, the condition "this
  attribute takes any value the episodes show except the counterexamples' values" removes
  every counterexample; the attribute that keeps the most of the rule's support is taken
  (then the one the episodes name first). The new condition is the widest that removes the
  counterexamples, so the repaired rule still reaches values no counterexample shows. When
  no single attribute removes them all, or every such condition loses all the support, it
  gives ``None`` and the caller narrows value by value (:mod:`.rule_narrowing`).

Code never invents a rule here: it only widens (drops conditions of) or specialises (adds
one condition to) a rule the generator proposed, and every result passes the check.
"""

from __future__ import annotations

from itertools import combinations
from typing import Mapping, Sequence

from .rule_check import LabelledEpisode, Rule, check, vocabulary

__all__ = ["entails", "generalise", "repair", "specificity"]


def generalise(rule: Rule, labelled: Sequence[LabelledEpisode]) -> Rule:
    """The most general rule made by dropping conditions of ``rule`` that no episode contradicts (see the module docs).

    ``rule`` itself when no drop keeps it consistent, or when it is not consistent to begin with."""
    if not check(rule, labelled).accepted:
        return rule
    order = _order(labelled, rule)
    attrs = sorted(rule.conditions, key=order.__getitem__)
    for size in range(len(attrs) + 1):
        best = None
        for kept in combinations(attrs, size):
            candidate = Rule({a: rule.conditions[a] for a in kept}, rule.label, rule.sentence)
            result = check(candidate, labelled)
            if result.accepted:
                key = (-len(result.coverage), [order[a] for a in kept])
                if best is None or key < best[0]:
                    best = (key, candidate)
        if best is not None:
            return best[1]
    return rule


def repair(rule: Rule, labelled: Sequence[LabelledEpisode], values: Mapping[str, Sequence[str]] | None = None) -> Rule | None:
    """``rule`` with one condition added that removes all its counterexamples (see the module docs), or ``None``.

    ``values``: each attribute's values (default: those the episodes show, :func:`vocabulary`)."""
    values = dict(vocabulary(labelled) if values is None else values)
    result = check(rule, labelled)
    if result.accepted or not result.counterexamples:
        return None
    by_index = {o.index: o for o in labelled}
    against = [by_index[i] for i in result.counterexamples]
    support = [by_index[i] for i in result.coverage if by_index[i].label == rule.label]
    order = _order(labelled, rule)
    best = None
    for attr in sorted((a for a in values if a not in rule.conditions), key=order.__getitem__):
        excluded = {o.attributes.get(attr) for o in against}
        if None in excluded:  # a counterexample without the attribute cannot be told apart by it
            continue
        allowed = frozenset(v for v in values[attr] if v not in excluded)
        kept = sum(o.attributes.get(attr) in allowed for o in support)
        if allowed and kept and (best is None or kept > best[0]):
            best = (kept, Rule({**rule.conditions, attr: allowed}, rule.label))
    return best[1] if best is not None else None


def entails(specific: Rule, general: Rule) -> bool:
    """Whether every object ``specific`` matches is matched by ``general`` (its conditions are at least as strict)."""
    return all(
        attr in specific.conditions and specific.conditions[attr] <= allowed for attr, allowed in general.conditions.items()
    )


def specificity(rule: Rule) -> tuple[int, int]:
    """How specific a rule is, larger first: its number of conditions, then how few values they allow (negated)."""
    return len(rule.conditions), -sum(len(v) for v in rule.conditions.values())


def _order(labelled: Sequence[LabelledEpisode], rule: Rule) -> dict[str, int]:
    """Attributes in the order the episodes name them, then any only the rule names."""
    names = list(vocabulary(labelled))
    names += [a for a in rule.conditions if a not in names]
    return {a: i for i, a in enumerate(names)}
