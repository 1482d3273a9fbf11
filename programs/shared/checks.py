"""Arguments checked where they enter a module, before any LM call, with one error naming what was given.

whole_number("K", K, minimum=0)        # 2 -> 2; 2.5, "3", True -> TypeError; -1 -> ValueError
texts("hypotheses", hypotheses)        # ["a", "b"] -> ["a", "b"]; "a rule" or None -> TypeError
some_episodes(episodes, "MemoryConsolidator")   # [] -> ValueError: nothing to draw a memory from
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, Iterable, Sequence

__all__ = ["some_episodes", "texts", "whole_number"]


def whole_number(name: str, value: Any, minimum: int) -> int:
    """``value`` as an ``int`` at least ``minimum``; ``TypeError`` for a bool, a float or a string."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be a whole number >= {minimum}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def texts(name: str, value: Iterable[str] | None) -> list[str]:
    """``value`` (a list, tuple or other iterable of texts) as a list of strings; refuses one string (it would be
    read as its characters), ``None``, a mapping, and items that are not strings."""
    if value is None or isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of strings, got {_described(value)}")
    items = list(value)
    wrong = [i for i, item in enumerate(items) if not isinstance(item, str)]
    if wrong:
        raise TypeError(f"{name} must be a list of strings; item {wrong[0]} is a {type(items[wrong[0]]).__name__}")
    return items


def some_episodes(episodes: Sequence[Any], who: str) -> None:
    """Refuse an empty list of episodes: ``who`` would ask an LM to draw a memory from nothing."""
    if not episodes:
        raise ValueError(f"{who} needs at least one episode: with none, it would draw its memory from nothing")


def _described(value: Any) -> str:
    if value is None:
        return "None"
    shown = repr(value)
    return f"a {type(value).__name__} ({shown[:60] + '...' if len(shown) > 60 else shown})"
