"""Comparing short texts an LM wrote: factors, hypotheses, verdicts, rule copies.

Two texts are the same when they differ only in case, whitespace, surrounding
quotes or trailing punctuation.
"""

from __future__ import annotations

import re
from typing import Iterable

__all__ = ["distinct", "normalise"]


def normalise(text: str) -> str:
    """The comparison key of ``text``."""
    return re.sub(r"\s+", " ", text).strip().strip("\"'`").rstrip(".;:!").strip().lower()


def distinct(texts: Iterable[str]) -> list[str]:
    """``texts`` stripped, without empty ones or repeats (first spelling kept), in order."""
    seen: set[str] = set()
    kept: list[str] = []
    for text in texts:
        key = normalise(text)
        if key and key not in seen:
            seen.add(key)
            kept.append(text.strip())
    return kept
