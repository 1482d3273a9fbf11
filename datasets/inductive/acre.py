"""ACRE (blicket-detector experiments) from ``reasoning_gym``'s ``acre`` dataset, as episodes and a query.

Each entry of the dataset is one problem: six experiments, each a set of objects put on a
detector with the light's state (on or off), and one new set whose state is asked: on,
off, or undetermined when the experiments do not settle it. ``reasoning_gym`` keeps the
experiments structured in the dataset's ``questions`` (each object as its colour, material
and shape words), beside the prompt text it writes from them; its entries' ``metadata``
hold only the source index, so episodes and the query are read from ``questions``, never
parsed from the text. The entries name no blickets, but the generator builds each problem so
that its blickets are exactly those the six experiments settle (it asserts so while building
them), so a problem's true rule, its ``oracle``, is read off its experiments by
:func:`true_blickets`. The dataset is built at a fixed size, so ``limit`` takes a prefix of the
same problems; the answer is scored by the dataset's own ``score_answer`` (exact match).

    true_blickets([(("red cube",), "on"), (("red cube", "blue ball"), "off")])   # raises: an object both
    true_blickets([(("red cube",), "on"), (("blue ball",), "off")]).statements()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .task import Example, Problem, Query, prefix

__all__ = ["ACRE", "LABELS", "SIZE", "TrueBlickets", "object_name", "true_blickets"]

LABELS = ("on", "off", "undetermined")
SIZE = 200  # problems built per seed; --limit takes a prefix


def object_name(words: list[str]) -> str:
    """An object as its words: ``["red", "metal", "sphere"]`` -> ``"red metal sphere"``."""
    return " ".join(words)


@dataclass(frozen=True)
class TrueBlickets:
    """What a problem's experiments settle: the blickets, the non-blickets, the objects left open, and the sets
    of open objects of which at least one is a blicket (a lit experiment holding no known blicket)."""

    blickets: tuple[str, ...]
    non_blickets: tuple[str, ...]
    undetermined: tuple[str, ...]
    one_of: tuple[tuple[str, ...], ...]

    def statements(self) -> list[str]:
        """The true rule as statements a reader is given (the oracle hypotheses)."""
        out = ["The light comes on when at least one blicket is on the detector, and stays off when none is."]
        out.append(f"Blickets: {', '.join(self.blickets)}." if self.blickets else "No object is known to be a blicket.")
        if self.non_blickets:
            out.append(f"Not blickets: {', '.join(self.non_blickets)}.")
        if self.undetermined:
            out.append(f"Not known whether they are blickets: {', '.join(self.undetermined)}.")
        out.extend(f"At least one of {', '.join(group)} is a blicket." for group in self.one_of)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "blickets": list(self.blickets),
            "non_blickets": list(self.non_blickets),
            "undetermined": list(self.undetermined),
            "one_of": [list(g) for g in self.one_of],
            "hypotheses": self.statements(),
        }


def true_blickets(experiments: Sequence[tuple[Sequence[str], str]]) -> TrueBlickets:
    """The statuses ``experiments`` (each: the objects on the detector, the light ``on`` or ``off``) settle, by ACRE's
    rule: every object of an unlit experiment is not a blicket; the one object of a lit experiment not known to be a
    non-blicket is a blicket; the rest are open. Experiments that contradict each other raise ``ValueError``."""
    lights = {str(light).strip().lower() for _, light in experiments}
    if not lights <= {"on", "off"}:
        raise ValueError(f"an experiment's light is on or off, got {sorted(lights - {'on', 'off'})}")
    non = {o for objects, light in experiments if light.strip().lower() == "off" for o in objects}
    lit = [set(objects) - non for objects, light in experiments if light.strip().lower() == "on"]
    if any(not left for left in lit):
        raise ValueError("a lit experiment holds only objects an unlit experiment shows are not blickets")
    blickets = {next(iter(left)) for left in lit if len(left) == 1}
    groups = {tuple(sorted(left)) for left in lit if not left & blickets}
    minimal = sorted(g for g in groups if not any(set(h) < set(g) for h in groups))
    every = {o for objects, _ in experiments for o in objects}
    return TrueBlickets(tuple(sorted(blickets)), tuple(sorted(non)), tuple(sorted(every - non - blickets)), tuple(minimal))


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
        oracle = true_blickets([(e.input, e.output) for e in episodes]).as_dict()
        return Problem(id=str(index), episodes=episodes, queries=(query,), oracle=oracle)

    def answer_text(self, answer: Any) -> str:
        return str(answer).strip().lower()

    def score(self, query: Query, answer: str) -> float:
        return float(self.dataset(0).score_answer(answer, query.entry))  # reads the entry alone
