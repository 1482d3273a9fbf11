"""A memory of entries, each knowing the stream items it was written from, and the guard that reads it.

    memory = EntryMemory()
    memory.add(Entry(text="Solved: ... Answer: ...", sources=["3"], kind="success", key="Make 24 using 1 3 5 9"))
    shown, withheld = memory.visible("3")        # entries written from item "3" are never shown to item "3"
    top = memory.nearest("Make 24 using 2 3 4 6", k=3, among=shown)   # lexical similarity, no embeddings

Similarity is the cosine of word-count vectors (lowercased letters and digits, with each word's
neighbouring pair): no model to download, deterministic, and good enough to find problems of the same
shape in a stream of generated problems.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

__all__ = ["Entry", "EntryMemory", "similarity", "words"]


@dataclass
class Entry:
    """One memory entry: its text (what a solver reads), the items it was written from, its kind (``success``,
    ``failure``, ``unjudged``, ``reflection``, ``lesson``), and the text it is retrieved by (``key``)."""

    text: str
    sources: list[str] = field(default_factory=list)
    kind: str = "success"
    key: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Entry":
        return cls(
            str(data["text"]),
            [str(s) for s in data.get("sources", [])],
            str(data.get("kind", "success")),
            str(data.get("key", "")),
            dict(data.get("extra") or {}),
        )


def words(text: str) -> Counter[str]:
    """The bag of words (and neighbouring word pairs) of ``text``."""
    tokens = re.findall(r"[a-z]+|\d+", text.lower())
    return Counter(tokens) + Counter(f"{a} {b}" for a, b in zip(tokens, tokens[1:]))


def similarity(a: str, b: str) -> float:
    """The cosine similarity of the word bags of ``a`` and ``b`` (0 to 1)."""
    x, y = words(a), words(b)
    dot = sum(x[w] * y[w] for w in x.keys() & y.keys())
    norm = math.sqrt(sum(v * v for v in x.values()) * sum(v * v for v in y.values()))
    return dot / norm if norm else 0.0


class EntryMemory:
    """Entries in the order they were written; thread-safe; saved as JSON."""

    def __init__(self, entries: Iterable[Entry] = ()):
        self.entries: list[Entry] = list(entries)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, entry: Entry) -> None:
        with self._lock:
            self.entries.append(entry)

    def visible(self, item_id: str) -> tuple[list[Entry], int]:
        """(the entries item ``item_id`` may be shown, how many were withheld: those written from it)."""
        with self._lock:
            shown = [e for e in self.entries if item_id not in e.sources]
            return shown, len(self.entries) - len(shown)

    def nearest(self, text: str, *, k: int, among: Sequence[Entry] | None = None) -> list[Entry]:
        """The ``k`` entries (of ``among``, default all) whose key is most like ``text``, most alike first; ties
        by recency (the newer first)."""
        pool = list(self.entries if among is None else among)
        ranked = sorted(range(len(pool)), key=lambda i: (-similarity(text, pool[i].key or pool[i].text), -i))
        return [pool[i] for i in ranked[:k]]

    def to_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [e.to_json() for e in self.entries]

    def load(self, data: Iterable[dict[str, Any]]) -> "EntryMemory":
        with self._lock:
            self.entries = [Entry.from_json(d) for d in data]
        return self
