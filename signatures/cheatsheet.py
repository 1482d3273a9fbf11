"""Signature of the Dynamic Cheatsheet curator (Suzgun et al. 2025, cumulative variant "DC-Cu").

    cheatsheet_i = Curate(cheatsheet_{i-1}, puzzle_i, solution_i)

The whole cheatsheet is rewritten at every update and given whole to the solver.
"""

from __future__ import annotations

import dspy


class CurateCheatsheet(dspy.Signature):
    """Update a cheatsheet of strategies for solving ARC puzzles with Python programs.

    Keep what is still useful, merge repeats, and add the reusable strategies, patterns
    and code snippets the new solved puzzle teaches. Return the whole updated cheatsheet,
    concise and organised."""

    cheatsheet: str = dspy.InputField(desc="the current cheatsheet; may be empty")
    puzzle: str = dspy.InputField(desc="a solved puzzle's example pairs")
    solution: str = dspy.InputField(desc="the program that solves it")
    updated_cheatsheet: str = dspy.OutputField(desc="the whole new cheatsheet")
