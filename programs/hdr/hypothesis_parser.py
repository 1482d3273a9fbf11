"""The deterministic interpreter of ``hypothesis_f1``: what label a structured hypothesis implies.

For every hypothesis and every attribute combination, :func:`parse_implications`
gives the label the hypothesis implies, or ``None`` (silent). It reads hypotheses
written only with the table's attribute values, its labels (any inflection:
"anomaly", "anomalies", "anomalous") and a small vocabulary of connecting words,
and understands two kinds of statement:

- a label rule names exactly one label, and the attribute values it names select
  the objects; several values of one attribute ("a square or a circle") mean any
  of them. "On a white background, red squares are labelled anomaly.",
  "Yellow squares are anomalous.", "An object with a black background is normal
  if it is a square or a circle."
- the background flip, in a table with two backgrounds and two labels: it names no
  shape or colour and says the same object has the other (a different, the
  opposite) label on the other background, e.g. ``RuleTable.flip_statement()`` or
  the paper's Figure 5 "If an object of a specific color and shape is normal on a
  white background, then the same object is anomalous on a black background."

A label rule with one negation ("not", "never", "n't": "Red squares are not
anomalies.", "Blue circles on black are not labelled normal.") is read as the
negation: with two labels it implies the other label; with more it implies
``NotLabel(x)`` ("not x": right wherever the table's label is some other one, and
covering no combination, since it fixes no label). Two negations, or a negation
in a flip statement, leave it silent.

Any other word ("only", "unless", a position, a size, a number) leaves the
hypothesis silent everywhere: the parser never guesses, and a hypothesis that
depends on something a combination does not fix implies nothing about it.

Every hypothesis is read on its own, never through the others of its set. The
flip implies, for each combination whose twin on the other background is scored,
``OtherThan(twin)``: right when the two labels differ, so it is correct on its own
exactly when the table flips; :func:`memreason.eval.metrics.hypothesis_f1` lets it
cover a combination once a correct label statement covers its twin. The paper's
one-directional wording is read as the symmetric flip, as the paper's authors read
it when they scored it correct (Table 5, Lv. 3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from memreason.signatures.implications import NotLabel, OtherThan

__all__ = ["BackgroundFlip", "Combination", "Implications", "LabelRule", "NotLabel", "OtherThan", "parse_implications"]

Combination = Mapping[str, str]
Implications = list[list[Any]]  # per combination: a label, NotLabel, OtherThan or None

CONNECTIVES = frozenset(
    """a an the all any every each object objects item items thing things image images one ones
    shape shapes colour colours color colors background backgrounds attribute attributes
    is are be being will always considered classified counted as label labels labelled labeled
    has have carry carries carrying get gets given specific on in of with if then when whenever
    where that which whose it they them its their this these those and or either""".split()
)
NEGATIONS = frozenset({"not", "never"})
FLIP_CUES = frozenset("other opposite different flip flips flipped reverse reversed swap swapped swaps".split())


@dataclass(frozen=True)
class LabelRule:
    """Objects whose attributes take one of the allowed values carry ``label`` (``negated``: do not carry it)."""

    allowed: dict[str, frozenset[str]]
    label: str
    negated: bool = False

    def label_for(self, combination: Combination, labels: Sequence[str] = ()) -> str | NotLabel | None:
        """What the rule implies for ``combination`` (``labels``: the table's, to read a negation)."""
        if not all(combination.get(attr) in values for attr, values in self.allowed.items()):
            return None
        if not self.negated:
            return self.label
        others = [label for label in labels if label != self.label]
        return others[0] if len(labels) == 2 and len(others) == 1 else NotLabel(self.label)


@dataclass(frozen=True)
class BackgroundFlip:
    """The same object carries the other label on the other background."""


def parse_implications(hypotheses: Sequence[str], combinations: Sequence[Combination], labels: Sequence[str]) -> Implications:
    """What each hypothesis, read on its own, implies for each combination (``None``: silent), aligned with both inputs."""
    reader = _Reader(combinations, labels)
    flip = _flip(combinations, labels)
    rows: Implications = []
    for hypothesis in hypotheses:
        parsed = reader.read(hypothesis)
        if isinstance(parsed, LabelRule):
            rows.append([parsed.label_for(c, labels) for c in combinations])
        else:
            rows.append(list(flip) if isinstance(parsed, BackgroundFlip) else [None] * len(combinations))
    return rows


class _Reader:
    """Turns one hypothesis into a LabelRule, a BackgroundFlip, or None (unreadable)."""

    def __init__(self, combinations: Sequence[Combination], labels: Sequence[str]):
        self.labels = [label.lower() for label in labels]
        self.values: dict[str, tuple[str, str]] = {}
        for combination in combinations:
            for attr, value in combination.items():
                for form in (value, f"{value}s", f"{value}es"):
                    self.values[form.lower()] = (attr, value)
        self.original_label = {label.lower(): label for label in labels}

    def read(self, text: str) -> LabelRule | BackgroundFlip | None:
        allowed: dict[str, set[str]] = {}
        labels: set[str] = set()
        cues: set[str] = set()
        negations = 0
        for token in re.findall(r"[a-z0-9]+", re.sub(r"n't\b", " not", text.lower().replace("\u2019", "'"))):
            label = self._label(token)
            if label:
                labels.add(label)
            elif token in self.values:
                attr, value = self.values[token]
                allowed.setdefault(attr, set()).add(value)
            elif token in FLIP_CUES or token == "same":
                cues.add(token)
            elif token in NEGATIONS:
                negations += 1
            elif token not in CONNECTIVES:
                return None
        if cues:
            return None if negations else self._flip(allowed, labels, cues)
        if negations > 1 or len(labels) != 1 or sum(len(v) > 1 for v in allowed.values()) > 1:
            return None
        return LabelRule({attr: frozenset(v) for attr, v in allowed.items()}, self.original_label[labels.pop()], negations == 1)

    @staticmethod
    def _flip(allowed: dict[str, set[str]], labels: set[str], cues: set[str]) -> BackgroundFlip | None:
        says_differs = bool(cues & FLIP_CUES) or ("same" in cues and len(labels) == 2)
        return BackgroundFlip() if says_differs and set(allowed) <= {"background"} else None

    def _label(self, token: str) -> str | None:
        hits = [
            label
            for label in self.labels
            if token in (label, f"{label}s", f"{label}es") or (len(label) >= 5 and token.startswith(label[:-1]))
        ]
        return hits[0] if len(hits) == 1 else None


def _flip(combinations: Sequence[Combination], labels: Sequence[str]) -> list[OtherThan | None]:
    """What the background flip implies on its own: each combination has the other label of its twin on the other background.

    Silent everywhere unless the combinations span exactly two backgrounds and there are two labels,
    and silent on a combination whose twin is not among the combinations.
    """
    backgrounds = sorted({c["background"] for c in combinations if "background" in c})
    if len(backgrounds) != 2 or len(labels) != 2:
        return [None] * len(combinations)
    position = {_key(c): j for j, c in enumerate(combinations)}
    implied: list[OtherThan | None] = []
    for combination in combinations:
        other = backgrounds[1 - backgrounds.index(combination["background"])]
        j = position.get(_key({**combination, "background": other}))
        implied.append(None if j is None else OtherThan(j))
    return implied


def _key(combination: Combination) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(combination.items()))
