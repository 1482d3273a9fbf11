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

Any other word (a negation, "only", "unless", a position, a size, a number) leaves
the hypothesis silent everywhere: the parser never guesses, and a hypothesis that
depends on something a combination does not fix implies nothing about it.

The flip implies labels only relative to other hypotheses, so it is expanded
against the label rules of the same set: for each combination it implies the
other label of what those rules imply for the same object on the other
background, and stays silent where they imply nothing or disagree. Alone, it
implies nothing. The paper's one-directional wording is read as the symmetric
flip, as the paper's authors read it when they scored it correct (Table 5, Lv. 3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

__all__ = ["BackgroundFlip", "Combination", "Implications", "LabelRule", "parse_implications"]

Combination = Mapping[str, str]
Implications = list[list[str | None]]

CONNECTIVES = frozenset(
    """a an the all any every each object objects item items thing things image images one ones
    shape shapes colour colours color colors background backgrounds attribute attributes
    is are be being will always considered classified counted as label labels labelled labeled
    has have carry carries carrying get gets given specific on in of with if then when whenever
    where that which whose it they them its their this these those and or either""".split()
)
FLIP_CUES = frozenset("other opposite different flip flips flipped reverse reversed swap swapped swaps".split())


@dataclass(frozen=True)
class LabelRule:
    """Objects whose attributes take one of the allowed values carry ``label``."""

    allowed: dict[str, frozenset[str]]
    label: str

    def label_for(self, combination: Combination) -> str | None:
        matches = all(combination.get(attr) in values for attr, values in self.allowed.items())
        return self.label if matches else None


@dataclass(frozen=True)
class BackgroundFlip:
    """The same object carries the other label on the other background."""


def parse_implications(hypotheses: Sequence[str], combinations: Sequence[Combination], labels: Sequence[str]) -> Implications:
    """The label each hypothesis implies for each combination (``None``: silent), aligned with both inputs."""
    reader = _Reader(combinations, labels)
    parsed = [reader.read(h) for h in hypotheses]
    ruled = {i: [p.label_for(c) for c in combinations] for i, p in enumerate(parsed) if isinstance(p, LabelRule)}
    flipped = _flip(list(ruled.values()), combinations, labels)
    rows: Implications = []
    for i, p in enumerate(parsed):
        if i in ruled:
            rows.append(ruled[i])
        else:
            rows.append(list(flipped) if isinstance(p, BackgroundFlip) else [None] * len(combinations))
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
        for token in re.findall(r"[a-z0-9]+", text.lower()):
            label = self._label(token)
            if label:
                labels.add(label)
            elif token in self.values:
                attr, value = self.values[token]
                allowed.setdefault(attr, set()).add(value)
            elif token in FLIP_CUES or token == "same":
                cues.add(token)
            elif token not in CONNECTIVES:
                return None
        if cues:
            return self._flip(allowed, labels, cues)
        if len(labels) != 1 or sum(len(v) > 1 for v in allowed.values()) > 1:
            return None
        return LabelRule({attr: frozenset(v) for attr, v in allowed.items()}, self.original_label[labels.pop()])

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


def _flip(ruled: Implications, combinations: Sequence[Combination], labels: Sequence[str]) -> list[str | None]:
    """What the background flip implies, given the label rules' implications ``ruled``.

    Silent everywhere unless the combinations span exactly two backgrounds and there are two labels.
    """
    backgrounds = sorted({c["background"] for c in combinations if "background" in c})
    if len(backgrounds) != 2 or len(labels) != 2:
        return [None] * len(combinations)
    position = {_key(c): j for j, c in enumerate(combinations)}
    implied: list[str | None] = []
    for combination in combinations:
        other = backgrounds[1 - backgrounds.index(combination["background"])]
        j = position.get(_key({**combination, "background": other}))
        said = {row[j] for row in ruled if row[j] is not None} if j is not None else set()
        implied.append(labels[1 - list(labels).index(said.pop())] if len(said) == 1 else None)
    return implied


def _key(combination: Combination) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(combination.items()))
