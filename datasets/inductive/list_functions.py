"""List Functions from ``reasoning_gym``'s ``list_functions`` dataset, as episodes and a query.

Each entry is one problem: input/output pairs of lists of integers made by one hidden
function (one of the dataset's 17 generator families), and a new input whose output is
asked. ``reasoning_gym`` keeps nothing structured beside the prompt (its ``metadata`` holds
only the source index), so the pairs and the query are parsed from the question's text
(``Input k: [...]`` / ``Output k: [...]``, then ``Input: [...]``); a question that does not
parse is an error, never skipped. The generator family (``list_functions.task_indices``) is
kept as the problem's ``family``; no function is given, so the task has no oracle. Answers
are lists written as Python writes them (``[1, 2]``), scored by the dataset's own
``score_answer``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .task import INT_LIST, Example, Problem, Query, TaskError, prefix

__all__ = ["LIST_FUNCTIONS", "ListFunctions", "parse_question"]

SIZE = 200  # problems built per seed; --limit takes a prefix
LIST_FUNCTIONS = "list_functions"
_PAIR = re.compile(r"^Input (\d+): (\[[^\]]*\])\nOutput \1: (\[[^\]]*\])$", re.MULTILINE)
_QUERY = re.compile(r"^Input: (\[[^\]]*\])$", re.MULTILINE)


def parse_question(question: str) -> tuple[list[tuple[list[int], list[int]]], list[int]]:
    """The (input, output) pairs and the query input a ``list_functions`` question shows."""
    pairs = [(_ints(i), _ints(o)) for _, i, o in _PAIR.findall(question)]
    query = _QUERY.findall(question)
    if not pairs or len(query) != 1:
        raise TaskError(f"a list_functions question that does not parse: {question[:80]!r}")
    return pairs, _ints(query[0])


def _ints(text: str) -> list[int]:
    values = json.loads(text)
    if not isinstance(values, list) or not all(isinstance(v, int) for v in values):
        raise TaskError(f"not a list of integers: {text!r}")
    return values


@dataclass
class ListFunctions:
    """List Functions' problems (``reasoning_gym``'s ``list_functions``)."""

    name: str = LIST_FUNCTIONS
    answer_type: str = INT_LIST
    size: int = SIZE

    def __post_init__(self) -> None:
        self._datasets: dict[int, Any] = {}

    def dataset(self, seed: int):
        if seed not in self._datasets:
            import reasoning_gym

            self._datasets[seed] = reasoning_gym.create_dataset(LIST_FUNCTIONS, seed=seed, size=self.size)
        return self._datasets[seed]

    def problems(self, seed: int = 0, limit: int | None = None) -> list[Problem]:
        dataset = self.dataset(seed)
        return [self._problem(dataset, i) for i in prefix(range(self.size), limit)]

    def _problem(self, dataset, index: int) -> Problem:
        entry = dataset[index]
        pairs, query = parse_question(entry["question"])
        episodes = tuple(Example(input=i, output=o, text=str(i), label=str(o)) for i, o in pairs)
        asked = Query(id=f"{index}-0", input=query, text=str(query), answer=str(entry["answer"]), entry=entry)
        return Problem(id=str(index), episodes=episodes, queries=(asked,), oracle=None)

    def family(self, seed: int, index: int) -> int:
        """The generator family of problem ``index`` (not shown to any program)."""
        return int(self.dataset(seed).task_indices[index])

    def answer_text(self, answer: Any) -> str:
        if isinstance(answer, str):
            return answer.strip()
        return str([int(v) for v in answer])

    def score(self, query: Query, answer: str) -> float:
        return float(self.dataset(0).score_answer(answer, query.entry))  # reads the entry alone
