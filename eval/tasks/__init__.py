"""Benchmarks as registered :class:`Task` objects: one interface for running, viewing and tuning every task.

    from memreason.eval.tasks import get_task, register_task, task_of
    get_task("acre").programs()          # what runs on it
    task_of(json.load(open("runs/x/results.json"))).item_score(record)

A benchmark of your own: subclass :class:`ProblemTask` (problems with labelled episodes and queries) or
:class:`Task`, register it (:func:`register_task`), and every command runs it: see the docs' tutorial
"A benchmark of your own".
"""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy)
    from .problem_task import ProblemTask
    from .registry import (
        PLUGINS_VARIABLE,
        TASKS,
        UnregisteredTask,
        default_task,
        get_task,
        register_task,
        task_for,
        task_names,
        task_of,
    )
    from .task import Task, identity_field, identity_keys

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".problem_task": "ProblemTask",
        ".registry": "PLUGINS_VARIABLE TASKS UnregisteredTask default_task get_task register_task task_for task_names task_of",
        ".task": "Task identity_field identity_keys",
    },
)

__all__ = [
    "PLUGINS_VARIABLE",
    "ProblemTask",
    "TASKS",
    "Task",
    "default_task",
    "UnregisteredTask",
    "get_task",
    "identity_field",
    "identity_keys",
    "register_task",
    "task_for",
    "task_names",
    "task_of",
]
