"""Inductive-reasoning tasks nobody here wrote (``reasoning_gym``'s ACRE and List Functions), through one interface.

    from memreason.datasets.inductive import ACRE
    task = ACRE()
    problem = task.problems(seed=0, limit=1)[0]     # .episodes, .queries
    task.score(problem.queries[0], "off")

See :mod:`.task` for the interface; ``reasoning_gym`` is imported when a task's data is first built.
"""

from .acre import ACRE
from .list_functions import ListFunctions, parse_question
from .task import INT_LIST, Example, InductiveTask, Problem, Query, TaskError

__all__ = [
    "ACRE",
    "INT_LIST",
    "Example",
    "InductiveTask",
    "ListFunctions",
    "Problem",
    "Query",
    "TaskError",
    "parse_question",
]
