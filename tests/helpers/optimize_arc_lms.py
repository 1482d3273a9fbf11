"""Scripted LMs for the ARC optimize tests, importable by name (``scripted:tests.helpers.optimize_arc_lms:task``).

The study's optimum is known: the solver writes a crashing program first and the right one
only when asked again with execution feedback (a retry), so a configuration scores 1 exactly
when it retries (``retries >= 1``) and 0 otherwise. The right program is read from the
puzzle: FLIP for the flip tasks of ``arc_helpers``, RECOLOR for the recolour ones.

- ``task``: crash, then right on the retry; ``ARC_INTERRUPT_ON=<text>`` in the environment
  makes it raise KeyboardInterrupt (Ctrl-C) when asked to solve a puzzle containing ``text``;
- ``memory``: PS selection, picking every concept title the memory shows;
- ``oracle``: right on the first try, on the tiny tasks and on every ARC training task (it
  looks the task up by its puzzle and writes a lookup table), so bootstrapping keeps demos.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from .arc_helpers import CRASH, FLIP, RECOLOR, last_given
from .scripted_answers import outputs


def is_retry(call) -> bool:
    """Whether the call is the solver's retry (its inputs carry the previous program)."""
    return "`previous_program`" in call.system


def tiny_solution(puzzle: str) -> str:
    """The right program for a tiny task: flip when the first example is mirrored, else recolour."""
    return FLIP if "input (1 rows x 2 columns):\n12" in puzzle else RECOLOR


def task():
    """Crash on the first try, the right program on a retry."""

    def respond(call):
        if outputs(call)[-1] != "program":
            return memory_answer(call)
        puzzle = last_given(call, "puzzle")
        stop = os.environ.get("ARC_INTERRUPT_ON")
        if stop and stop in puzzle:
            raise KeyboardInterrupt  # as Ctrl-C would, mid-trial
        return {"program": tiny_solution(puzzle) if is_retry(call) else CRASH}

    return respond


def memory():
    """The memory LM: PS selection of every concept title shown."""
    return memory_answer


def memory_answer(call):
    if outputs(call)[-1] != "selected":
        raise AssertionError(f"the memory LM was asked for {outputs(call)}")
    titles = re.findall(r"^- (.+?) \[", last_given(call, "memory"), re.M)
    return {"reasoning": "the cues fit", "selected": titles}


@lru_cache(maxsize=1)
def training_tables() -> dict[str, str]:
    """Puzzle text -> a lookup-table program for every ARC-AGI-1 training task."""
    from memreason.datasets.arc import load_split, puzzle_text

    tables = {}
    for item in load_split("arc1-training"):
        table = {str(p.input): p.output for p in [*item.train, *item.test]}
        tables[puzzle_text(item).strip()] = (
            f"TABLE = {table!r}\n\n\ndef transform(grid):\n    return TABLE[str([[int(c) for c in row] for row in grid])]\n"
        )
    return tables


def oracle():
    """Right on the first try: a lookup table for a training task, FLIP or RECOLOR for a tiny one."""

    def respond(call):
        if outputs(call)[-1] != "program":
            return memory_answer(call)
        puzzle = last_given(call, "puzzle").strip()
        return {"program": training_tables().get(puzzle) or tiny_solution(puzzle)}

    return respond
