"""ACRE (blicket-detector experiments) from ``reasoning_gym``'s ``acre`` dataset, as episodes and a query.

Each entry of the dataset is one problem: six experiments, each a set of objects put on a
detector with the light's state (on or off), and one new set whose state is asked: on,
off, or undetermined when the experiments do not settle it. ``reasoning_gym`` keeps the
experiments structured in the dataset's ``questions`` (each object as its colour, material
and shape words), beside the prompt text it writes from them; its entries' ``metadata``
hold only the source index, so episodes and the query are read from ``questions``, never
parsed from the text, and no true blickets are given (the task has no oracle). The dataset
is built at a fixed size, so ``limit`` takes a prefix of the same problems; the answer is
scored by the dataset's own ``score_answer`` (exact match).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .task import Example, Problem, Query, prefix, register_task

__all__ = ["ACRE", "LABELS", "SIZE", "object_name"]

LABELS = ("on", "off", "undetermined")
SIZE = 200  # problems built per seed; --limit takes a prefix


def object_name(words: list[str]) -> str:
    """An object as its words: ``["red", "metal", "sphere"]`` -> ``"red metal sphere"``."""
    return " ".join(words)


@dataclass
class ACRE:
    """ACRE's problems (``reasoning_gym``'s ``acre``, training configuration)."""

    name: str = "acre"
    answer_type: tuple[str, ...] = LABELS
    size: int = SIZE

    def __post_init__(self) -> None:
        self._datasets: dict[int, Any] = {}

    def dataset(self, seed: int):
        if seed not in self._datasets:
            import reasoning_gym

            self._datasets[seed] = reasoning_gym.create_dataset("acre", seed=seed, size=self.size)
        return self._datasets[seed]

    def problems(self, seed: int = 0, limit: int | None = None) -> list[Problem]:
        dataset = self.dataset(seed)
        return [self._problem(dataset, i) for i in prefix(range(self.size), limit)]

    def _problem(self, dataset, index: int) -> Problem:
        entry = dataset[index]
        structured = dataset.questions[index]
        episodes = tuple(
            Example(input=objects, output=e["output"], text=", ".join(objects), label=e["output"])
            for e in structured["examples"]
            for objects in [tuple(object_name(o) for o in e["input"])]
        )
        objects = tuple(object_name(o) for o in structured["question"]["input"])
        query = Query(id=f"{index}-0", input=objects, text=", ".join(objects), answer=str(entry["answer"]), entry=entry)
        return Problem(id=str(index), episodes=episodes, queries=(query,))

    def answer_text(self, answer: Any) -> str:
        return str(answer).strip().lower()

    def score(self, query: Query, answer: str) -> float:
        return float(self.dataset(0).score_answer(answer, query.entry))  # reads the entry alone


register_task("acre", ACRE)
