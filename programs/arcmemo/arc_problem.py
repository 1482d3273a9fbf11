"""How the ARC programs state a task to the task-neutral concept modules (selection, abstraction).

    arc_problem(task)                      # the grid format and goal, then the example pairs and test inputs
    arc_problem(task, test_inputs=False)   # for abstraction: the pairs a solution was verified on
    arc_problem_image(task)                # the task drawn as one image (OE captions with a vision model)

The grids are rendered by :func:`memreason.datasets.arc.puzzle_text`, unchanged, after
:data:`ARC_INTRO`.
"""

from __future__ import annotations

import dspy

from memreason.datasets.arc import ArcTask, puzzle_text, task_image

__all__ = ["ARC_INTRO", "arc_problem", "arc_problem_image"]

ARC_INTRO = (
    "An ARC puzzle. Each grid is a list of rows of colours 0-9 (0 is usually the background), "
    "written one row per line, one digit per cell. One rule turns every example input into its "
    "output; a solution is a Python program transform(grid) that applies it, to the test inputs too."
)


def arc_problem(task: ArcTask, *, test_inputs: bool = True) -> str:
    return f"{ARC_INTRO}\n\n{puzzle_text(task, test_inputs=test_inputs)}"


def arc_problem_image(task: ArcTask) -> dspy.Image:
    return dspy.Image(task_image(task))
