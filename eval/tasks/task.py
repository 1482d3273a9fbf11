"""A benchmark as one object: :class:`Task`, what the runner, the viewers and the tuners ask of every benchmark.

    task = get_task("acre")                       # memreason.eval.tasks: the registry
    task.programs()                               # the registered programs that run on it
    outcome = task.run(EvaluateOptions(program="hdr", task="acre", limit=20))   # a run directory, results
    task.item_score(record), task.item_key(record, config)                     # what paired tests read

A task declares the kind of task it is (``kind``: :data:`memreason.programs.registry.SCENES`, ``GRIDS`` or
``PROBLEMS``), which decides the programs that run on it; its config dataclass, whose fields marked
``identity`` (:func:`identity_field`) decide a run's results and so whether a run directory can be continued;
how a run is checked, loaded and run (:meth:`Task.run`); and how one of its items reads in a run's files (its
score, its key across runs, what ``show`` prints for it, what ``report`` adds for it). Nothing outside the tasks
names a task: the viewers (``show``, ``report``, paired tests, ``arc_table``) and tuners (``python -m optimize``)
find the task of a run with :func:`memreason.eval.tasks.task_of` (or ``task_for``) and ask it.

What ``show`` and ``report`` print has defaults a problem task keeps (:mod:`.show`: each problem's memory, a line
per query; :mod:`.report`: the accuracy row, its CI, paired tests); a task overrides the ``show_*`` and
``report_*`` methods for its own (Experience-Transfer's scenes, ARC's programs and concepts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from memreason.programs import PROGRAMS

from ..harness.resume import identity_field, identity_keys
from ..report_parts import TOKENS_PLOT, Plot, Section

if TYPE_CHECKING:
    from ..show import Run

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
    not_here: ClassVar[dict[str, str]] = {}  # a program kind that cannot run here -> why, in words

    # -- what runs on it ------------------------------------------------------------------------

    def programs(self) -> list[str]:
        """The registered programs that run on this task."""
        return [name for name, spec in PROGRAMS.items() if spec.runs_on(self)]

    def why_not(self, program: str) -> str | None:
        """Why ``program`` cannot run on this task (None: it can)."""
        spec = PROGRAMS.get(program)
        if spec is None:
            return f"no program named {program}"
        return None if spec.runs_on(self) else self.not_here.get(spec.kind, f"written for {spec.kind} tasks")

    def not_applicable(self) -> dict[str, str]:
        """Every registered program that cannot run on this task, with why."""
        return {name: why for name in PROGRAMS if (why := self.why_not(name)) is not None}

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

    def headline_std(self, results: dict[str, Any]) -> float | None:
        """The std over repetitions of a run's headline score (a fraction), None where its results hold none."""
        value = results.get(self.headline)
        return value.get("std") if isinstance(value, dict) else None

    # -- what show prints (python -m eval show RUN_DIR) ------------------------------------------------

    def show_title(self) -> str:
        """The task as the header of ``show`` names it."""
        return self.name.replace("_", "-")

    def show_setting(self, config: dict[str, Any]) -> str:
        """The header's line on what a run ran, from its ``config.json``."""
        from . import show as default_show

        return default_show.setting(config)

    def show_results(self, results: dict[str, Any]) -> list[str]:
        """The header's lines on a finished run, from its ``results.json``: its scores."""
        from . import show as default_show

        return default_show.header_lines(results)

    def show_memory(self, run: Run, r: int) -> list[Any]:
        """What the memory panel of repetition ``r`` holds (rich renderables); default: each problem's memory."""
        from . import show as default_show

        return default_show.memory_parts(run, r)

    def show_overview(self, run: Run, records: list[dict[str, Any]]) -> Any:
        """One line per example record (a rich table)."""
        from . import show as default_show

        return default_show.overview(run, records)

    def show_example(self, run: Run, record: dict[str, Any], calls: list[dict[str, Any]]) -> tuple[list[Any], str]:
        """An example in full: what goes above its LM calls (rich renderables; ``calls``: all its traced calls), and its
        verdict for the panel's title."""
        from . import show as default_show

        return default_show.example(run, record, calls)

    # -- what report adds (python -m eval report RUN_DIR ...) ------------------------------------------

    def report_label(self, results: dict[str, Any]) -> str:
        """A run's name in a report's tables: its program and what it ran on."""
        return f"{results.get('program', '?')} {self.name}"

    def report_sections(self) -> tuple[Section, ...]:
        """The report's sections for this task's runs, after the results, paired tests, failures and tokens of every
        run: each is called once with the rows of the runs whose task lists it (the same section listed by several
        tasks: one table of all their runs)."""
        return ()

    def report_plots(self) -> tuple[Plot, ...]:
        """The report's plots of this task's runs, in order; each drawn once from the runs whose task lists it
        (default: the score against tokens)."""
        return (TOKENS_PLOT,)

    def paper_tables(self, results: list[dict[str, Any]]) -> str | None:
        """Runs' results as the tables of the task's paper (``python -m eval arc_table``), None when the task has
        none or some results cannot be tabled."""
        return None

    def __repr__(self) -> str:
        return f"<task {self.name}>"
