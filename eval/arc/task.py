"""ARC-AGI (the ArcMemo paper's task: its splits, generated 1D-ARC and re-ARC) as a registered
:class:`memreason.eval.tasks.Task`. Its loop (passes, continual memory, snapshots) is :mod:`.run`'s own."""

from __future__ import annotations

from typing import Any, ClassVar

from memreason.programs.registry import GRIDS

from ..tasks.task import Task
from .attribution import official
from .evaluate import run_arc

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
        return run_arc(options)

    def claims(self, record: dict[str, Any]) -> bool:
        return record.get("task") == self.name or "split" in record

    def item_score(self, record: dict[str, Any]) -> float:
        return official(record)

    def correct(self, record: dict[str, Any]) -> bool:
        return official(record) >= 1

    def item_key(self, record: dict[str, Any], config: dict[str, Any]) -> str:
        return str(record["id"])

    def row_label(self, results: dict[str, Any]) -> str:
        return f"{results.get('program', '?')} on {results.get('split', '?')}"

    def describe_item(self, record: dict[str, Any]) -> str:
        return f"official score {official(record):g}"


TASKS = [Arc()]
