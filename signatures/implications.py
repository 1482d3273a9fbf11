"""What a hypothesis implies for an attribute combination besides a label: the parser's output and ``hypothesis_f1``'s input.

A statement implies, per combination, a label, ``NotLabel(x)``, ``OtherThan(k)`` or nothing (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NotLabel:
    """What a negation implies where the labels are not two: "not ``label``", which fixes no label."""

    label: str


@dataclass(frozen=True)
class OtherThan:
    """What the background flip implies for a combination: the other label of combination ``index`` (two labels)."""

    index: int
