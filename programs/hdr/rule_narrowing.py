"""Narrowing a refuted rule by its counterexamples, in code (``hdr_grounded``).

    narrower = narrow(rule, labelled)     # a Rule no episode contradicts, or None

A rule the check refuted matches some episodes with its label (its support) and some with
another (its counterexamples). Narrowing drops, from the values the rule allows, values
the counterexamples have, until no counterexample matches, keeping as much of the support
as it can. An attribute the rule leaves free allows every value the episodes show, so
dropping one of its values constrains it to the others. Deterministic, greedy:

    support, against <- the episodes r matches with its label, with another label
    while against:
        for each (attribute, value) of an episode in against:     # the candidate drops
            r' <- r without that value
            lost <- support episodes r' no longer matches; removed <- against episodes it no longer matches
        take the drop with the fewest lost, then the most removed, then the attribute that comes first
        in the episodes, then the value seen first
        r, support, against <- r', support - lost, against - removed
    return r if support else None

Each step removes at least one counterexample, so it ends; a narrowed rule that keeps some
support matches no counterexample, so it always passes the check. Only what a
counterexample contradicts is dropped: the rest of what the rule claims (values no episode
shows with the rule's attributes) stands as the generator wrote it. Code never invents a
rule here, it only narrows one the generator proposed.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from .rule_check import LabelledEpisode, Rule, vocabulary

__all__ = ["narrow"]


def narrow(rule: Rule, labelled: Sequence[LabelledEpisode], values: Mapping[str, Sequence[str]] | None = None) -> Rule | None:
    """``rule`` with the values its counterexamples have dropped (see the module docs); ``None`` when it has no
    counterexample, no support, or would keep none of its support.

    ``values``: each attribute's values (default: those the episodes show, :func:`vocabulary`).
    """
    values = dict(vocabulary(labelled) if values is None else values)
    conditions = {attr: set(allowed) for attr, allowed in rule.conditions.items()}
    support = [o for o in labelled if rule.matches(o.attributes) and o.label == rule.label]
    against = [o for o in labelled if rule.matches(o.attributes) and o.label != rule.label]
    if not support or not against:
        return None
    order = {attr: i for i, attr in enumerate([*values, *(a for a in conditions if a not in values)])}
    while against:
        best = None
        for attr, value in _drops(against, conditions, values, order):
            narrower = _rule(_without(conditions, values, attr, value), rule.label)
            lost = sum(not narrower.matches(o.attributes) for o in support)
            removed = sum(not narrower.matches(o.attributes) for o in against)
            key = (lost, -removed, order[attr], _rank(values, attr, value))
            if best is None or key < best[0]:
                best = (key, attr, value, narrower)
        _, attr, value, narrower = best
        conditions = _without(conditions, values, attr, value)
        support = [o for o in support if narrower.matches(o.attributes)]
        against = [o for o in against if narrower.matches(o.attributes)]
    return _rule(conditions, rule.label) if support else None


def _rule(conditions: Mapping[str, set[str]], label: str) -> Rule:
    """A rule with exactly these allowed sets (an empty one matches nothing; ``Rule.of`` would read it as any value)."""
    return Rule({attr: frozenset(allowed) for attr, allowed in conditions.items()}, label)


def _drops(
    against: Sequence[LabelledEpisode], conditions: Mapping[str, set[str]], values: Mapping[str, Sequence[str]], order
) -> list[tuple[str, str]]:
    """Every (attribute, value) a counterexample has that the rule still allows."""
    drops = set()
    for o in against:
        for attr, value in o.attributes.items():
            if attr in order and value in conditions.get(attr, values.get(attr, ())):
                drops.add((attr, value))
    return sorted(drops, key=lambda d: (order[d[0]], _rank(values, *d)))


def _without(
    conditions: Mapping[str, set[str]], values: Mapping[str, Sequence[str]], attr: str, value: str
) -> dict[str, set[str]]:
    allowed = set(conditions[attr]) if attr in conditions else set(values[attr])
    return {**{a: set(v) for a, v in conditions.items()}, attr: allowed - {value}}


def _rank(values: Mapping[str, Sequence[str]], attr: str, value: str) -> tuple[int, str]:
    known = list(values.get(attr, ()))
    return (known.index(value) if value in known else len(known), value)
