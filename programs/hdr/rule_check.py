"""The code check of ``hdr_grounded``: a structured rule against every labelled episode.

    rule     = Rule(conditions={"color": {"red"}, "background": {"white"}}, label="anomaly")
    verdict  = check(rule, labelled)              # coverage, counterexamples, accepted or why not
    sentence = rule.statement()                   # the rule as the reasoner reads it

Code sees a labelled episode as its attributes and label (``LabelledEpisode``). A rule
*matches* an episode when every attribute it constrains takes one of the allowed values
there (an attribute the episode lacks never matches); it is accepted when it matches at
least one episode and every episode it matches carries its label. A rule that matches nothing implies
nothing the episodes can confirm, and is rejected like one with a counterexample.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

__all__ = ["Check", "LabelledEpisode", "Rule", "check", "implications", "rules_from_record", "unexplained", "vocabulary"]


@dataclass(frozen=True)
class LabelledEpisode:
    """One labelled episode as code sees it: its index, attributes and label."""

    index: int
    attributes: Mapping[str, str]
    label: str

    def as_dict(self) -> dict[str, str]:
        return {**self.attributes, "label": self.label}


@dataclass(frozen=True)
class Rule:
    """Objects whose attributes take one of the allowed values carry ``label``."""

    conditions: Mapping[str, frozenset[str]]
    label: str
    sentence: str = field(default="", compare=False)

    @classmethod
    def of(cls, conditions: Mapping[str, Sequence[str]], label: str, sentence: str = "") -> "Rule":
        """A rule from plain lists; attributes with no values listed (any value) are dropped."""
        kept = {attr: frozenset(str(v) for v in values) for attr, values in conditions.items() if values}
        return cls(kept, str(label), sentence)

    def matches(self, attributes: Mapping[str, str]) -> bool:
        return all(attributes.get(attr) in values for attr, values in self.conditions.items())

    def key(self) -> tuple:
        return tuple(sorted((a, tuple(sorted(v))) for a, v in self.conditions.items())), self.label

    def statement(self) -> str:
        """The rule in a fixed wording: "Objects with color red or blue and background white are labelled anomaly."."""
        if not self.conditions:
            return f"All objects are labelled {self.label}."
        parts = [f"{attr} {' or '.join(sorted(values))}" for attr, values in sorted(self.conditions.items())]
        return f"Objects with {' and '.join(parts)} are labelled {self.label}."

    def as_dict(self) -> dict[str, Any]:
        return {"conditions": {a: sorted(v) for a, v in sorted(self.conditions.items())}, "label": self.label}


@dataclass(frozen=True)
class Check:
    """What the check found: the episodes a rule matches, the ones that contradict it, and the verdict."""

    rule: Rule
    coverage: tuple[int, ...]
    counterexamples: tuple[int, ...]

    @property
    def accepted(self) -> bool:
        return bool(self.coverage) and not self.counterexamples

    @property
    def reason(self) -> str:
        if not self.coverage:
            return "it matches no episode, so it implies nothing the episodes confirm"
        if self.counterexamples:
            n = len(self.counterexamples)
            return f"{n} episode{'s' if n > 1 else ''} it matches carr{'y' if n > 1 else 'ies'} another label"
        return f"every one of the {len(self.coverage)} episodes it matches carries {self.rule.label}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "statement": self.rule.statement(),
            "sentence": self.rule.sentence,
            **self.rule.as_dict(),
            "accepted": self.accepted,
            "reason": self.reason,
            "coverage": list(self.coverage),
            "counterexamples": list(self.counterexamples),
        }


def check(rule: Rule, labelled: Sequence[LabelledEpisode]) -> Check:
    """Check ``rule`` against every observation."""
    matched = [o for o in labelled if rule.matches(o.attributes)]
    return Check(rule, tuple(o.index for o in matched), tuple(o.index for o in matched if o.label != rule.label))


def unexplained(rules: Sequence[Rule], labelled: Sequence[LabelledEpisode]) -> list[LabelledEpisode]:
    """The episodes no rule matches."""
    return [o for o in labelled if not any(r.matches(o.attributes) for r in rules)]


def vocabulary(labelled: Sequence[LabelledEpisode]) -> dict[str, list[str]]:
    """Each attribute the episodes show, with its values, in order of first appearance."""
    values: dict[str, list[str]] = {}
    for o in labelled:
        for attr, value in o.attributes.items():
            seen = values.setdefault(attr, [])
            if value not in seen:
                seen.append(value)
    return values


def implications(rules: Sequence[Rule], combinations: Sequence[Mapping[str, str]]) -> list[list[str | None]]:
    """The label each rule implies for each combination (``None``: it does not match), for ``hypothesis_f1``."""
    return [[rule.label if rule.matches(c) else None for c in combinations] for rule in rules]


def rules_from_record(record: Mapping[str, Any]) -> list[Rule]:
    """The verified rules a ``hdr_grounded`` memory record keeps (``record["rules"]``)."""
    return [Rule.of(r["conditions"], r["label"], r.get("sentence", "")) for r in record.get("rules", [])]
