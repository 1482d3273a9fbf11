"""A benchmark as one object: :class:`Task`, what the runner, the viewers and the tuners ask of every benchmark.

    task = get_task("acre")                       # memreason.eval.tasks: the registry
    task.programs()                               # the registered programs that run on it
    outcome = task.run(EvaluateOptions(program="hdr", task="acre", limit=20))   # a run directory, results
    task.item_score(record), task.item_key(record, config)                     # what paired tests read

A task declares the kind of task it is (``kind``: :data:`memreason.programs.registry.SCENES`, ``GRIDS`` or
``PROBLEMS``), which decides the programs that run on it; its config dataclass, whose fields marked
``identity`` (:func:`identity_field`) decide a run's results and so whether a run directory can be continued;
how a run is checked, loaded and run (:meth:`Task.run`); and how one of its items reads in a run's files (its
score, its key across runs, what ``show`` prints for it). Nothing outside the tasks names a task: the
viewers (``show``, ``report``, paired tests) and tuners (``python -m optimize``) find the task of a run
with :func:`memreason.eval.tasks.task_of` and ask it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from memreason.programs import PROGRAMS

from ..harness.resume import identity_field, identity_keys

__all__ = ["Task", "identity_field", "identity_keys"]


class Task:
    """What a benchmark provides. Subclass it, set the class attributes, write :meth:`run`; the reading methods
    have defaults for runs whose records hold ``correct`` (true when the item was answered right).

    ``name``: what ``--task`` names; ``kind``: what it feeds programs (the programs that run on it are those
    registered for that kind); ``unit`` and ``item``: its items, plural and singular (``"queries"``, ``"query"``);
    ``right``: what a score of 1 means, for paired tables; ``headline``: the results key of its headline score
    (a ``{"mean": ...}`` object) and ``headline_ci``: of its 95% CI.
    """

    name: ClassVar[str]
    kind: ClassVar[str]
    unit: ClassVar[str] = "items"
    item: ClassVar[str] = "item"
    right: ClassVar[str] = "answer right"
    headline: ClassVar[str] = "accuracy"
    headline_ci: ClassVar[str] = "accuracy_ci"
    summary: ClassVar[str] = ""  # one line for listings

    # -- what runs on it ------------------------------------------------------------------------

    def programs(self) -> list[str]:
        """The registered programs that run on this task."""
        return [name for name, spec in PROGRAMS.items() if spec.runs_on(self)]

    def run(self, options: Any, *, spend: Any = None) -> Any:
        """Run ``options.program`` on this task into a run directory (or continue the one ``options.out`` holds):
        a :class:`memreason.eval.harness.publish.Outcome`. Bad input raises before any model loads."""
        raise NotImplementedError(f"{type(self).__name__} does not run programs")

    # -- reading a run's files ----------------------------------------------------------------------

    def claims(self, record: dict[str, Any]) -> bool:
        """Whether a run's ``config.json`` or ``results.json`` is one of this task's (saved before tasks were named
        in them, too)."""
        return record.get("task") == self.name

    def item_score(self, record: dict[str, Any]) -> float:
        """An example record's score in its run (1 right, 0 wrong; partial credit where the task gives it)."""
        return 1.0 if record.get("correct") else 0.0

    def correct(self, record: dict[str, Any]) -> bool:
        """Whether an example record counts as answered right."""
        return bool(record.get("correct"))

    def item_key(self, record: dict[str, Any], config: dict[str, Any]) -> str:
        """What an example is across runs (paired tests match items by it): its id, with the data's seed when it is
        not the default one (another seed's item ``3`` is another item)."""
        seed = config.get("seed") or 0
        return f"{self.name} {record['id']}" + (f" (seed {seed})" if seed else "")

    def headline_value(self, results: dict[str, Any]) -> float | None:
        """A run's headline score (a fraction), from its results."""
        value = results.get(self.headline)
        return value.get("mean") if isinstance(value, dict) else value

    def row_label(self, results: dict[str, Any]) -> str:
        """A run's row in a report: its program and what it ran on."""
        return f"{results.get('program', '?')} on {self.name}"

    def describe_item(self, record: dict[str, Any]) -> str:
        """One line for an example in ``show``'s list: what was asked, what came back."""
        return f"{record.get('prediction')!r} (target {record.get('target')!r})"

    def __repr__(self) -> str:
        return f"<task {self.name}>"
