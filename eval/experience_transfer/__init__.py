"""The HDR paper's Experience-Transfer task: evaluate a program (:func:`run_cell`), the paper's tables
(:func:`run_table`), the demo (:func:`run_demo`), and hypothesis scoring."""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy): the programs and DSPy come with them
    from .demo import DemoOptions, run_demo
    from .evaluate import EvaluateOptions, run_cell, summary_table
    from .run import ExperienceTransferConfig, evaluate_experience_transfer, level_episodes
    from .tables import TABLES, TableOptions, run_table

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".demo": "DemoOptions run_demo",
        ".evaluate": "EvaluateOptions run_cell summary_table",
        ".run": "ExperienceTransferConfig evaluate_experience_transfer level_episodes",
        ".tables": "TABLES TableOptions run_table",
    },
)

__all__ = [
    "TABLES",
    "DemoOptions",
    "EvaluateOptions",
    "ExperienceTransferConfig",
    "TableOptions",
    "evaluate_experience_transfer",
    "level_episodes",
    "run_cell",
    "run_demo",
    "run_table",
    "summary_table",
]
