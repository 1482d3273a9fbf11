"""Signature of the Dynamic Cheatsheet curator (Suzgun et al. 2025, cumulative variant "DC-Cu").

    cheatsheet_i = Curate(cheatsheet_{i-1}, puzzle_i, solution_i)

The whole cheatsheet is rewritten at every update and given whole to the solver. It comes back as
a list of entries (one strategy, pattern or snippet each), not one string: asked for the whole
sheet as one JSON string, the embedded 1.5B model returned its own prompt's field markers.
"""

from __future__ import annotations

from typing import Annotated

import dspy
from annotated_types import Len


class CurateCheatsheet(dspy.Signature):
    """Update a cheatsheet of strategies for solving ARC puzzles with Python programs.

    Keep what is still useful, merge repeats, and add the reusable strategies, patterns
    and code snippets the new solved puzzle teaches. Return the whole updated cheatsheet,
    concise and organised: one strategy, pattern or code snippet an entry, in your own words."""

    cheatsheet: str = dspy.InputField(desc="the current cheatsheet, an entry a line; may be empty")
    puzzle: str = dspy.InputField(desc="a solved puzzle's example pairs")
    solution: str = dspy.InputField(desc="the program that solves it")
    updated_cheatsheet: Annotated[list[str], Len(1, 12)] = dspy.OutputField(
        desc="the whole new cheatsheet: one to twelve entries, each a strategy, pattern or code snippet"
    )
