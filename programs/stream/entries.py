"""A memory of entries, each knowing the stream items it was written from, and the guard that reads it.

    memory = EntryMemory()
    memory.add(Entry(text="Solved: ... Answer: ...", sources=["3"], kind="success", key="Make 24 using 1 3 5 9"))
    shown, withheld = memory.visible("3")        # entries written from item "3" are never shown to item "3"
    top = memory.nearest("Make 24 using 2 3 4 6", k=3, among=shown)   # lexical similarity, no embeddings

Similarity is the cosine of word-count vectors (lowercased letters and digits, with each word's
neighbouring pair): no model to download, deterministic, and good enough to find problems of the same
shape in a stream of generated problems.

Each entry has an id (``e1``, ``e2``, ... in the order written) and, once its writes are verified, a record of
what it did (:class:`memreason.programs.stream.utility.Record`): the probes it turned right and wrong when it was
admitted, and how often the items it was shown to were right. Reads then rank by similarity and that measured
utility; an entry whose record shows harm, or that a token budget pushed out, is retired: kept, never shown.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from .utility import Record

__all__ = ["Entry", "EntryMemory", "FreshLock", "estimated_tokens", "similarity", "words"]


def estimated_tokens(text: str) -> int:
    """The tokens of ``text``, estimated as characters / 4 (no tokenizer to download): what memory budgets count."""
    return (len(text) + 3) // 4


class FreshLock:
    """A lock that every copy and every pickle gets anew: a copy of a memory never waits on the original's lock, and a
    program holding one deep-copies and pickles (``copy.deepcopy``, DSPy's ``save_program=True``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> bool:
        return self._lock.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._lock.__exit__(*exc)

    def __deepcopy__(self, memo: dict) -> "FreshLock":
        return FreshLock()

    def __reduce__(self):
        return FreshLock, ()


@dataclass
class Entry:
    """One memory entry: its text (what a solver reads), the items it was written from, its kind (``success``,
    ``failure``, ``unjudged``, ``reflection``, ``lesson``), and the text it is retrieved by (``key``)."""

    text: str
    sources: list[str] = field(default_factory=list)
    kind: str = "success"
    key: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    id: str = ""  # given by EntryMemory.add: e1, e2, ...
    record: Record | None = None  # what it did, once its write was verified (None: never measured)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["record"] = self.record.to_json() if self.record is not None else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Entry":
        return cls(
            str(data["text"]),
            [str(s) for s in data.get("sources", [])],
            str(data.get("kind", "success")),
            str(data.get("key", "")),
            dict(data.get("extra") or {}),
            str(data.get("id") or ""),
            Record.from_json(data["record"]) if data.get("record") else None,
        )

    @property
    def retired(self) -> bool:
        return self.record is not None and self.record.retired is not None

    def tokens(self) -> int:
        """Its size in tokens, estimated as characters / 4 (no tokenizer to download)."""
        return estimated_tokens(self.text)


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
        self._lock = FreshLock()

    def __len__(self) -> int:
        """The entries not retired."""
        return len(self.active())

    def add(self, entry: Entry) -> Entry:
        """Keep ``entry``, giving it the next id when it has none; returns it."""
        with self._lock:
            if not entry.id:
                entry.id = f"e{self._next_id()}"
            self.entries.append(entry)
        return entry

    def _next_id(self) -> int:
        numbers = [int(e.id[1:]) for e in self.entries if re.fullmatch(r"e\d+", e.id)]
        return max(numbers, default=0) + 1

    def remove(self, ids: Iterable[str]) -> list[Entry]:
        """Drop the entries with these ids altogether (not retired: gone from the snapshot too); those dropped."""
        wanted = set(ids)
        with self._lock:
            dropped = [e for e in self.entries if e.id in wanted]
            self.entries = [e for e in self.entries if e.id not in wanted]
        return dropped

    def find(self, entry_id: str) -> Entry | None:
        with self._lock:
            return next((e for e in self.entries if e.id == entry_id), None)

    def active(self) -> list[Entry]:
        """The entries not retired."""
        with self._lock:
            return [e for e in self.entries if not e.retired]

    def visible(self, item_id: str) -> tuple[list[Entry], int]:
        """(the entries item ``item_id`` may be shown, how many were withheld: those written from it); retired
        entries are neither."""
        with self._lock:
            active = [e for e in self.entries if not e.retired]
            shown = [e for e in active if item_id not in e.sources]
            return shown, len(active) - len(shown)

    def nearest(self, text: str, *, k: int, among: Sequence[Entry] | None = None) -> list[Entry]:
        """The ``k`` entries (of ``among``, default all not retired) whose key is most like ``text`` and whose
        measured utility is highest (:meth:`Record.rank_bonus`; nothing for entries never measured), best first;
        ties by recency (the newer first)."""
        pool = list(self.active() if among is None else among)

        def rank(i: int) -> tuple[float, int]:
            entry = pool[i]
            bonus = entry.record.rank_bonus() if entry.record is not None else 0.0
            return -(similarity(text, entry.key or entry.text) + bonus), -i

        return [pool[i] for i in sorted(range(len(pool)), key=rank)[:k]]

    def tokens(self) -> int:
        """The tokens of the entries not retired (:meth:`Entry.tokens`)."""
        return sum(e.tokens() for e in self.active())

    def fit(self, budget: int) -> list[str]:
        """Retire the least useful entries until those left fit in ``budget`` tokens (least utility first, then the
        oldest); the ids retired."""
        retired = []
        with self._lock:
            active = [e for e in self.entries if not e.retired]
            order = sorted(range(len(active)), key=lambda i: (active[i].record.utility() if active[i].record else 0.0, i))
            total = sum(e.tokens() for e in active)
            for i in order:
                if total <= budget:
                    break
                entry = active[i]
                entry.record = (entry.record or Record()).retire("budget")
                total -= entry.tokens()
                retired.append(entry.id)
        return retired

    def to_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [e.to_json() for e in self.entries]

    def load(self, data: Iterable[dict[str, Any]]) -> "EntryMemory":
        with self._lock:
            self.entries = [Entry.from_json(d) for d in data]
        return self
