"""Experience-Transfer (the HDR paper's task) as a registered :class:`memreason.eval.tasks.Task`."""

from __future__ import annotations

from typing import Any, ClassVar

from memreason.programs.registry import SCENES

from ..report_parts import Plot, Section
from ..tasks.task import Task

__all__ = ["TASKS", "ExperienceTransfer"]


class ExperienceTransfer(Task):
    """Synthetic shape scenes: one memory from the level's labelled episodes, then the count of anomalous objects
    asked of each test scene (``--level``, ``--rules``, ``--modality``, ``--per-object``, ``--retrieve-k``)."""

    name: ClassVar[str] = "experience_transfer"
    kind: ClassVar[str] = SCENES
    unit: ClassVar[str] = "scenes"
    item: ClassVar[str] = "scene"
    right: ClassVar[str] = "count right"
    summary: ClassVar[str] = "the HDR paper's Experience-Transfer scenes: count the anomalous objects (--level 1-3)"

    def run(self, options: Any, *, spend: Any = None) -> Any:
        from .evaluate import run_cell

        return run_cell(options, spend=spend)  # it records its own task name

    def claims(self, record: dict[str, Any]) -> bool:
        return record.get("task") in (None, self.name) and "split" not in record and "format" not in record

    def item_key(self, record: dict[str, Any], config: dict[str, Any]) -> str:
        """A scene's id; with the seed and rule table when they are not the paper's (another table's scene 3 is
        another scene)."""
        seed, rules = config.get("seed") or 0, config.get("rules")
        return str(record["id"]) if (seed, rules) == (0, None) else f"{record['id']} (seed {seed}, rules {rules})"

    def show_setting(self, config: dict[str, Any]) -> str:
        from . import show

        return show.setting(config)

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
        level = results.get("level")
        return str(results.get("program", "?")) + (f" L{level}" if level is not None else "")

    def report_sections(self) -> tuple[Section, ...]:
        from . import report

        return report.SECTIONS

    def report_plots(self) -> tuple[Plot, ...]:
        from . import report

        return report.PLOTS


TASKS = [ExperienceTransfer()]
