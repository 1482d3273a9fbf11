"""reasoning-gym's datasets as a stream of text problems: ``rg:NAME`` for any of its generators.

    data = GymData("puzzle24", {"min_value": 1})         # GymError (a ValueError) for an unknown name or a bad config
    tests = data.items(seed=0, size=50, distinct=True)    # GymItem(id, question, answer, metadata, entry), seeded
    seeds = data.seed_items(seed=0, size=10, avoid=tests)  # memory sources: another seed stream, no test question
    data.score(tests[0], "10*(8 - 5) - 6")                # the dataset's own score_answer: 1.0 right

Items come from ``reasoning_gym.create_dataset(name, seed=..., size=..., **config)``; each keeps the
generator's entry, which the dataset's ``score_answer(answer, entry)`` scores. Memory sources (seed
problems) come from a second seed stream (:func:`seed_stream`) and never share a question with the
test items: a drawn seed problem whose question is a test item's is dropped and another drawn. A run's
test items are distinct problems too (``distinct``): a generator that repeats a small problem would
otherwise let memory written from one copy answer the other.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from memreason.installed import command

__all__ = ["GymData", "GymError", "GymItem", "dataset_names", "disjoint", "seed_stream"]

#: The seed stream of memory sources is the test seed plus this (a stream no test seed reaches by small steps).
SEED_STREAM_OFFSET = 1_000_003


class GymError(ValueError):
    """An unknown dataset name or a config the dataset refuses (one line at the command line)."""


@dataclass(frozen=True)
class GymItem:
    """One problem: its id in the run, its question, its reference answer, the generator's metadata and entry."""

    id: str
    question: str
    answer: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)
    entry: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def dataset_names() -> list[str]:
    """Every dataset name reasoning-gym registers (``reasoning_gym.factory.DATASETS``)."""
    from reasoning_gym.factory import DATASETS

    return sorted(DATASETS)


def seed_stream(seed: int) -> int:
    """The seed of the memory sources' stream for test seed ``seed``."""
    return seed + SEED_STREAM_OFFSET


def disjoint(a: Iterable[GymItem], b: Iterable[GymItem]) -> bool:
    """Whether no question of ``a`` is a question of ``b`` (compared as text, stripped)."""
    return not {x.question.strip() for x in a} & {y.question.strip() for y in b}


class GymData:
    """One reasoning-gym dataset with its config; items by seed and size."""

    def __init__(self, name: str, config: Mapping[str, Any] | None = None):
        names = dataset_names()
        if name not in names:
            close = [n for n in names if name.lower() in n or n in name.lower()][:5]
            hint = f" (did you mean {', '.join(close)}?)" if close else f" ({command('eval')} tasks --gym lists them)"
            raise GymError(f"unknown reasoning-gym dataset {name!r}{hint}")
        self.name, self.config = name, dict(config or {})
        self._datasets: dict[tuple[int, int], Any] = {}
        self._lock = threading.Lock()
        self._dataset(0, 1)  # a bad config is refused here, before any model loads

    def _dataset(self, seed: int, size: int) -> Any:
        import reasoning_gym

        with self._lock:
            key = (seed, size)
            if key not in self._datasets:
                try:
                    self._datasets[key] = reasoning_gym.create_dataset(self.name, seed=seed, size=size, **self.config)
                except (TypeError, ValueError, AssertionError, KeyError) as exc:
                    said = str(exc).replace(".__init__()", "") or type(exc).__name__
                    raise GymError(f"{self.name} refuses the config {json.dumps(self.config)}: {said}") from None
            return self._datasets[key]

    def items(self, seed: int = 0, size: int = 50, *, prefix: str = "", distinct: bool = False) -> list[GymItem]:
        """The first ``size`` items of the stream ``seed`` (ids ``<prefix><index>``, the index in the stream). With
        ``distinct``, an item whose question an earlier one asked is skipped and the next taken (some generators
        repeat small problems), so no two items are the same problem."""
        return self._take(seed, size, prefix=prefix, skip=set() if distinct else None)

    def seed_items(self, seed: int = 0, size: int = 10, *, avoid: Sequence[GymItem] = ()) -> list[GymItem]:
        """``size`` memory sources from the stream :func:`seed_stream` (``seed``), ids ``s<index>``, distinct, none
        with a question of ``avoid`` (the test items): such a draw is dropped and the next taken."""
        if size <= 0:
            return []
        return self._take(seed_stream(seed), size, prefix="s", skip={item.question.strip() for item in avoid})

    def _take(self, seed: int, size: int, *, prefix: str, skip: set[str] | None) -> list[GymItem]:
        """The first ``size`` items of stream ``seed``; with ``skip`` (questions), none asking one of those or an
        earlier item's question. Items are drawn as far as needed (at most ``2 size + 10``); the first ``n`` items
        of a stream are the same whatever its length."""
        most = size if skip is None else size * 2 + 10
        limit = size if skip is None else min(most, size + 5)  # some generators make every item up front: no more
        while True:
            dataset, taken, found = self._dataset(seed, limit), set(skip or ()), []
            for index in range(limit):
                if len(found) == size:
                    break
                try:
                    entry = dataset[index]
                except Exception as exc:  # a generator that fails on this config: one line, not a traceback
                    raise GymError(f"{self.name} with config {json.dumps(self.config)} failed to generate: {exc}") from None
                question = str(entry["question"])
                if skip is not None:
                    if question.strip() in taken:
                        continue
                    taken.add(question.strip())
                metadata = dict(entry.get("metadata") or {})
                found.append(GymItem(f"{prefix}{index}", question, str(entry["answer"]), metadata, dict(entry)))
            if len(found) == size or limit == most:
                break
            limit = min(most, limit * 2)
        if len(found) < size:
            raise GymError(f"{self.name}: only {len(found)} distinct problems in {limit} drawn; ask for fewer")
        return found

    def score(self, item: GymItem, answer: str | None) -> float:
        """The dataset's ``score_answer(answer, entry)`` (1.0 right; some datasets give partial credit)."""
        if answer is None:
            return 0.0
        dataset = self._dataset(0, 1)
        try:
            return float(dataset.score_answer(answer, item.entry))
        except Exception:  # a scorer that chokes on a malformed answer scores it wrong
            return 0.0
