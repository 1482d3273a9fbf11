"""ARC-AGI (the ArcMemo paper's task: its splits, generated 1D-ARC and re-ARC) as a registered
:class:`memreason.eval.tasks.Task`. Its loop (passes, continual memory, snapshots) is :mod:`.run`'s own."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from memreason.programs.registry import GRIDS

from ..report_parts import Plot, Section
from ..tasks.task import Task

__all__ = ["TASKS", "Arc"]


class Arc(Task):
    """ARC tasks: train pairs shown, a program written and run on the test inputs, scored by the official score
    (``--split``, ``--memory``, ``--attempts``, ``--retries``, ...)."""

    name: ClassVar[str] = "arc"
    kind: ClassVar[str] = GRIDS
    unit: ClassVar[str] = "tasks"
    item: ClassVar[str] = "task"
    right: ClassVar[str] = "official score above 0"
    headline: ClassVar[str] = "official_score"
    headline_ci: ClassVar[str] = "official_score_ci"
    summary: ClassVar[str] = "ARC-AGI program synthesis (--split val100, arc1d, rearc, a directory of task files)"

    def run(self, options: Any, *, spend: Any = None) -> Any:
        from .evaluate import run_arc

        return run_arc(options)

    def claims(self, record: dict[str, Any]) -> bool:
        return record.get("task") == self.name or "split" in record

    def item_score(self, record: dict[str, Any]) -> float:
        from .attribution import official

        return official(record)

    def correct(self, record: dict[str, Any]) -> bool:
        from .attribution import official

        return official(record) >= 1

    def item_key(self, record: dict[str, Any], config: dict[str, Any]) -> str:
        return str(record["id"])

    def show_setting(self, config: dict[str, Any]) -> str:
        from . import show

        return show.setting(config)

    def show_results(self, results: dict[str, Any]) -> list[str]:
        from . import show

        return show.header_lines(results)

    def show_memory(self, run: Any, r: int) -> list[Any]:
        from . import show

        return show.memory_parts(run, r)

    def show_overview(self, run: Any, records: list[dict[str, Any]]) -> Any:
        from . import show

        return show.overview(run, records)

    def show_example(self, run: Any, record: dict[str, Any], calls: list[dict[str, Any]]) -> tuple[list[Any], str]:
        from . import show

        return show.example(run, record, calls)

    def report_label(self, results: dict[str, Any]) -> str:
        split = results.get("split")
        return str(results.get("program", "?")) + (f" {Path(str(split)).name}" if split else "")  # a directory: its name

    def report_sections(self) -> tuple[Section, ...]:
        from . import report

        return report.SECTIONS

    def report_plots(self) -> tuple[Plot, ...]:
        from . import report

        return report.PLOTS

    def paper_tables(self, results: list[dict[str, Any]]) -> str | None:
        """The ArcMemo paper's tables (:func:`memreason.eval.arc.tables.tables`) of results that hold ``oracle_at_k``."""
        if not results or not all(self.claims(r) and "oracle_at_k" in r for r in results):
            return None
        from .tables import tables

        return tables(results)


TASKS = [Arc()]
