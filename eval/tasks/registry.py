"""The registry of tasks: ``--task NAME`` finds its :class:`Task` here.

    @register_task
    class Tiny(ProblemTask): ...          # or register_task(Tiny()) with an instance
    get_task("tiny")                      # UsageError (one line, exit 2) naming the known tasks for an unknown name
    task_of(results)                      # the task a run's results.json or config.json belongs to (None: none)
    task_for(results)                     # ... or, when none claims it, one read by the defaults (show, report)

Tasks of the library register when this package is imported. Tasks of your own register when their module
is imported: from Python, import it before running; from the command line, name the module (a dotted name,
or a ``.py`` file) in ``MEMREASON_TASKS`` (several: separated by commas), or publish it as an entry point of
the group ``memreason.tasks`` in your package's metadata. Each is imported once, the first time a task is looked up.

Importing a module runs its code, as pytest runs a plugin's: name only modules you trust. One that cannot be
loaded (a missing file, a syntax error, any exception at import, a ``sys.exit`` there) is a :class:`UsageError`
naming it and what went wrong: one line, exit 2, never a traceback nor a command ended in silence.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, TypeVar

from memreason.plugins import Plugins
from memreason.programs import PROGRAMS
from memreason.programs.registry import PROBLEMS, load_programs

from ..harness.errors import UsageError
from ..report_parts import Section
from .report import checked
from .task import Task

__all__ = ["TASKS", "PLUGINS_VARIABLE", "default_task", "get_task", "register_task", "task_for", "task_names", "task_of"]

PLUGINS_VARIABLE = "MEMREASON_TASKS"  # modules (or .py files) that register tasks of their own
ENTRY_POINTS = "memreason.tasks"

TASKS: dict[str, Task] = {}
ON_DEMAND: dict[str, Callable[[str], Task]] = {}  # a name's prefix -> what builds its task when first asked for
PLUGINS = Plugins(PLUGINS_VARIABLE, ENTRY_POINTS)  # the modules of MEMREASON_TASKS and the entry points, once each
_builtin: set[str] = set()

T = TypeVar("T", Task, type)


def register_task(task: T) -> T:
    """Register ``task`` (an instance, or a :class:`Task` subclass, instantiated with no arguments) under its
    name; returns what it was given, so it works as a class decorator. A second task of the same name replaces
    the first."""
    instance = task() if isinstance(task, type) else task
    if not isinstance(instance, Task):
        raise TypeError(f"register_task takes a Task, got {type(instance).__name__}")
    if not getattr(instance, "name", None):
        raise TypeError(f"{type(instance).__name__} has no name")
    TASKS[instance.name] = instance
    return task


def load_plugins() -> None:
    """Register the library's tasks, then import the modules named in ``MEMREASON_TASKS`` and the
    ``memreason.tasks`` entry points (each once), and the memory programs of ``MEMREASON_PROGRAMS`` and
    ``memreason.programs`` (:func:`memreason.programs.load_programs`)."""
    load_programs(error=UsageError)
    for name in BUILTIN:
        if name not in _builtin:
            _builtin.add(name)
            module = importlib.import_module(name)
            for task in module.TASKS:
                TASKS.setdefault(task.name, task)
            ON_DEMAND.update(getattr(module, "ON_DEMAND", {}))
    PLUGINS.load(on_entry=_register_found, error=UsageError)


def _register_found(found: Any) -> None:
    """An entry point's object registered, where it is a task (a module's import registers its own)."""
    if isinstance(found, Task) or (isinstance(found, type) and issubclass(found, Task)):
        register_task(found)


def get_task(name: str) -> Task:
    """The registered task ``name`` (``rg:NAME``, any reasoning-gym dataset, is registered when first asked for);
    :class:`UsageError` naming the known ones."""
    load_plugins()
    _on_demand(name)
    if name not in TASKS:
        raise UsageError(f"unknown task {name!r}; choose from: {', '.join(task_names())}")
    return TASKS[name]


def task_names() -> list[str]:
    """The names of the registered tasks, in the order they registered."""
    load_plugins()
    return list(TASKS)


def default_task(program: str) -> Task:
    """The task ``program`` runs on when no ``--task`` is given: the first registered task of its own kind (a
    program written for problem tasks has none: :class:`UsageError` naming the tasks it runs on)."""
    spec = PROGRAMS[program]
    if spec.kind != PROBLEMS:
        for name in task_names():
            if TASKS[name].kind == spec.kind:
                return TASKS[name]
    runs_on = [name for name in task_names() if program in TASKS[name].programs()]
    raise UsageError(f"{program} runs on a problem task: give --task {' or --task '.join(runs_on)}")


def task_of(record: dict[str, Any]) -> Task | None:
    """The task a run's ``config.json`` or ``results.json`` (``record``) belongs to, None when none claims it."""
    load_plugins()
    named = record.get("task")
    if isinstance(named, str):
        try:
            _on_demand(named)
        except UsageError:
            pass
    if isinstance(named, str) and named in TASKS:
        return TASKS[named]
    return next((task for task in TASKS.values() if task.claims(record)), None)


class UnregisteredTask(Task):
    """The task of a run that no registered task claims (a task of your own whose module is not imported here): read
    by the defaults, as a problem task's (its items queries, scored by ``correct``, its memories one per problem).
    It runs nothing."""

    kind = PROBLEMS
    unit = "queries"
    item = "query"

    def __init__(self, name: str):
        self.name = name

    def claims(self, record: dict[str, Any]) -> bool:
        return False

    def programs(self) -> list[str]:
        return []

    def report_sections(self) -> tuple[Section, ...]:
        return (checked,)


def task_for(record: dict[str, Any]) -> Task:
    """:func:`task_of`, or, when no registered task claims ``record`` (a task of your own whose module is not
    imported here), an :class:`UnregisteredTask` of the name it gives: read by the defaults, as a problem task."""
    return task_of(record) or UnregisteredTask(str(record.get("task") or "?"))


def _on_demand(name: str) -> None:
    """Register the task ``name`` builds when asked for: ``rg:NAME``, any reasoning-gym dataset, or ``et:LN``,
    Experience-Transfer's scenes (stream tasks); :class:`UsageError` for an unknown dataset or level."""
    load_plugins()
    for prefix, build in ON_DEMAND.items():
        if name not in TASKS and name.startswith(prefix):
            register_task(build(name))


# The library's own tasks: each module's ``TASKS`` (a list of Task instances) registers on first look-up.
BUILTIN = (
    "memreason.eval.experience_transfer.task",
    "memreason.eval.arc.task",
    "memreason.eval.inductive.task",
    "memreason.eval.stream.task",
)
