"""One interface for inductive-reasoning tasks: a task yields problems; a problem shows labelled episodes and asks queries.

    task = ACRE()                                   # or ListFunctions(), or any InductiveTask of your own
    for problem in task.problems(seed=0, limit=5):  # seeded, deterministic
        problem.episodes[0].input, problem.episodes[0].output, problem.episodes[0].text
        query = problem.queries[0]
        task.score(query, task.answer_text(answer))  # 1.0 right, 0.0 wrong (reasoning_gym's score_answer where it has one)

The command line runs a task through its registered :class:`memreason.eval.tasks.ProblemTask`, which holds
the data. Every problem is solved on its own: a program builds its memory from that problem's
episodes only, then answers that problem's queries. ``answer_type`` says what an answer is:
a tuple of labels (one of them is the answer) or ``"int_list"`` (a list of integers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

__all__ = ["INT_LIST", "Example", "InductiveTask", "Problem", "Query", "TaskError"]

INT_LIST = "int_list"  # the answer type of a task whose answers are lists of integers


class TaskError(ValueError):
    """A bad request of a task's data (reported as one line)."""


@dataclass(frozen=True)
class Example:
    """One labelled episode: what was shown (``input``), what came of it (``output``), and both as text."""

    input: Any
    output: Any
    text: str  # the observation as a reader sees it (the input alone)
    label: str  # the output as text


@dataclass(frozen=True)
class Query:
    """One question of a problem: its input, as data and as text, and the reference answer as text."""

    id: str
    input: Any
    text: str
    answer: str
    entry: dict[str, Any] = field(default_factory=dict, compare=False)  # what the task's scorer reads


@dataclass(frozen=True)
class Problem:
    """A problem: the episodes it shows and the queries it asks; ``oracle`` is its true rule where the task gives one."""

    id: str
    episodes: tuple[Example, ...]
    queries: tuple[Query, ...]
    oracle: dict[str, Any] | None = None


class InductiveTask(Protocol):
    """What a task gives: its name, its answer type, seeded problems, and a scorer."""

    name: str
    answer_type: tuple[str, ...] | str  # the labels an answer is one of, or INT_LIST

    def problems(self, seed: int = 0, limit: int | None = None) -> list[Problem]:
        """The first ``limit`` problems (all: ``None``) of the task's seeded problem set."""
        ...

    def answer_text(self, answer: Any) -> str:
        """An answer as the scorer reads it."""
        ...

    def score(self, query: Query, answer: str) -> float:
        """The score of ``answer`` (text) to ``query``: 1.0 right, 0.0 wrong."""
        ...


def prefix(items: Sequence[Any], limit: int | None) -> list[Any]:
    """The first ``limit`` items (all of them: ``None``); a limit below 1 is refused."""
    if limit is not None and limit < 1:
        raise TaskError(f"limit must be at least 1, got {limit}")
    return list(items if limit is None else items[:limit])
