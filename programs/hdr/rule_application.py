"""Checked rules applied to an object as they were checked (``hdr_grounded``'s reader), and what they leave open.

    attributes = object_attributes("red square", "black", vocabulary)   # {"color": "red", "shape": "square", "background": "black"}
    applied    = apply_rules(rules, attributes)                         # the rules that match, in precedence order
    open_      = undecidable(rules, labelled)                           # unseen combinations consistent rules disagree on

An object's attributes are read off its description in code, by the values the episodes
show (:func:`object_attributes`), and a rule applies to it when ``Rule.matches`` says so:
the very matcher the check used on the episodes, so an object of a combination no episode
showed meets exactly the rules whose conditions reach it.

Precedence, as a rule learner orders a decision list (exceptions first):

1. A rule is *overridden* when another rule that applies is strictly more specific than it
   (:func:`.rule_generality.entails`: every object the specific one matches, the general one
   matches too) and carries another label: the exception wins over the general rule.
2. The rules left are ordered most specific first (more conditions, then fewer values
   allowed), memory order among equals.
3. The label is the first rule's, unless a rule as specific as it carries another label:
   then nothing decides between them (``conflict``; ``label`` is ``None``).

Two rules that both passed the check never disagree on a combination the episodes show (each
would be the other's counterexample), so overrides and conflicts happen only on unseen
combinations. :func:`undecidable` lists those where the episodes leave the label open: every
combination of the values the episodes show that no episode has, on which the most general
rules that no episode contradicts and that reach it carry different labels. The rules counted
are the memory's and every conjunction of the combination's own values over fewer attributes
that matches some episode and no counterexample; the most general are those conditioning on
the fewest attributes (the Occam preference the memory is built with): a one-attribute rule
outweighs a two-attribute rule that disagrees, two one-attribute rules that disagree leave it
open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations, product
from typing import Any, Mapping, Sequence

from .rule_check import LabelledEpisode, Rule, check, vocabulary
from .rule_generality import entails, specificity

__all__ = ["Application", "apply_rules", "object_attributes", "undecidable"]


@dataclass(frozen=True)
class Application:
    """The rules that apply to one object: those that count, in precedence order, and those overridden."""

    rules: tuple[Rule, ...]
    overridden: tuple[Rule, ...] = ()

    @property
    def conflict(self) -> bool:
        """Whether rules of the same (highest) specificity carry different labels: nothing decides between them."""
        if not self.rules:
            return False
        top = specificity(self.rules[0])
        return len({r.label for r in self.rules if specificity(r) == top}) > 1

    @property
    def label(self) -> str | None:
        """The label precedence gives (``None``: no rule applies, or a conflict)."""
        return None if not self.rules or self.conflict else self.rules[0].label

    def as_dict(self) -> dict[str, Any]:
        return {
            "rules": [r.statement() for r in self.rules],
            "overridden": [r.statement() for r in self.overridden],
            "label": self.label,
            "conflict": self.conflict,
        }


def apply_rules(rules: Sequence[Rule], attributes: Mapping[str, str]) -> Application:
    """The rules of ``rules`` that match ``attributes``, with precedence applied (see the module docs)."""
    matching = [r for r in rules if r.matches(attributes)]
    overridden = [
        r for r in matching if any(s is not r and s.label != r.label and entails(s, r) and not entails(r, s) for s in matching)
    ]
    kept = [r for r in matching if not any(r is o for o in overridden)]
    order = sorted(range(len(kept)), key=lambda i: (tuple(-x for x in specificity(kept[i])), i))
    return Application(tuple(kept[i] for i in order), tuple(overridden))


def object_attributes(name: str, background: str | None, values: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """An object's attributes read off its description by the values the episodes show (``values``, per attribute).

    An attribute named ``background`` is read from ``background`` (the scene's), every other from ``name``
    (the object, as "red square"); a value counts when it is a whole word (a plural "s" allowed), the longest
    value first. An attribute none of whose values appears is left out, so no rule that constrains it applies.
    """
    found: dict[str, str] = {}
    for attr, options in values.items():
        text = (background or "") if attr == "background" and background is not None else name
        for value in sorted(options, key=lambda v: (-len(v), v)):
            if re.search(rf"(?<![a-z0-9]){re.escape(value.lower())}s?(?![a-z0-9])", text.lower()):
                found[attr] = value
                break
    return found


def undecidable(rules: Sequence[Rule], labelled: Sequence[LabelledEpisode]) -> list[dict[str, Any]]:
    """The unseen combinations the episodes leave open (see the module docs), each with the rules on each side.

    Each entry: ``combination`` (attribute -> value), ``labels`` (label -> the statements of the most general
    consistent rules that give it, the memory's first), ``conditions`` (how many attributes those rules condition
    on), and ``memory_label``: what the memory's rules give it by precedence
    (``None``: none applies, or they conflict)."""
    values = vocabulary(labelled)
    names = list(values)
    if any(set(o.attributes) != set(names) for o in labelled):
        return []  # episodes that name different attributes: no product of values to speak of
    seen = {tuple(o.attributes[a] for a in names) for o in labelled}
    out = []
    for combo in product(*(values[a] for a in names)):
        if combo in seen:
            continue
        attributes = dict(zip(names, combo))
        reaching = [r for r in rules if r.matches(attributes)] + _general_rules(attributes, labelled)
        fewest = min((len(r.conditions) for r in reaching), default=0)
        sides: dict[str, list[str]] = {}
        for rule in (r for r in reaching if len(r.conditions) == fewest):
            statements = sides.setdefault(rule.label, [])
            if rule.statement() not in statements:
                statements.append(rule.statement())
        if len(sides) > 1:
            memory_label = apply_rules(rules, attributes).label
            out.append({"combination": attributes, "labels": sides, "conditions": fewest, "memory_label": memory_label})
    return out


def _general_rules(attributes: Mapping[str, str], labelled: Sequence[LabelledEpisode]) -> list[Rule]:
    """Every conjunction of some of ``attributes``' values (fewer than all) that passes the check, with any label."""
    labels = list(dict.fromkeys(o.label for o in labelled))
    names = list(attributes)
    found = []
    for size in range(len(names)):
        for kept in combinations(names, size):
            for label in labels:
                rule = Rule.of({a: [attributes[a]] for a in kept}, label)
                if check(rule, labelled).accepted:
                    found.append(rule)
    return found
