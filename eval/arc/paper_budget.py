"""What the ArcMemo paper's full val100 protocol would cost on the models a run names: printed before any call.

    log_paper_estimate(options)   # with --preset arcmemo-paper: one line on the log, nothing sent anywhere

The protocol is the paper's headline one (Section 5 and Appendix B): the 100 val100 tasks, 3 runs, 2 attempts each,
0 retries, and one concept-selection call per task and run on the memory LM (ArcMemo-PS). The prompt tokens are
counted from the val100 tasks themselves (their train pairs and test inputs as the solver shows them, four
characters a token) plus :data:`SOLVER_OVERHEAD` for the instructions and the selected concepts; a selection call
also reads the memory (``--memory``, its file's characters over four). Two dollar figures: *at most*, with every
answer running to its cap (``max_tokens``: exact bounds), and *about*, with :data:`SOLVER_ANSWER` tokens a solver
answer (reasoning included) and half the cap a selection answer. Prices are LiteLLM's offline ones.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memreason.datasets.arc import load_split, puzzle_text
from memreason.lm.cost import price
from memreason.lm.tokens import Tokens

from ..harness.presets import PRESETS

__all__ = ["PaperEstimate", "SOLVER_ANSWER", "SOLVER_OVERHEAD", "log_paper_estimate", "paper_estimate"]

log = logging.getLogger(__name__)

PRESET = "arcmemo-paper"
CHARS_PER_TOKEN = 4
SOLVER_OVERHEAD = 1500  # tokens of a solver prompt besides the puzzle: instructions, selected concepts
SELECTION_OVERHEAD = 500  # ... of a selection prompt besides the puzzle and the memory
SOLVER_ANSWER = 8000  # a typical o4-mini answer at medium effort on ARC, reasoning included (an assumption)


@dataclass(frozen=True)
class PaperEstimate:
    """The protocol's calls and tokens per role, and their dollars (None where a model has no price)."""

    tasks: int
    runs: int
    attempts: int
    solver_calls: int
    selection_calls: int
    solver_prompt: float
    selection_prompt: float
    typical_usd: float | None
    most_usd: float | None

    def line(self, task_spec: str, memory_spec: str) -> str:
        def money(value: float | None) -> str:
            return "unknown (a model without a price, or a role without a cap)" if value is None else f"${value:,.2f}"

        return (
            f"budget estimate for the ArcMemo paper's val100 protocol ({self.tasks} tasks x {self.runs} runs, "
            f"{self.attempts} attempts, 0 retries, a selection call per task): {self.solver_calls} solver calls on "
            f"{task_spec} (about {self.solver_prompt:,.0f} prompt tokens each) and {self.selection_calls} selection calls "
            f"on {memory_spec} (about {self.selection_prompt:,.0f}): about {money(self.typical_usd)} with "
            f"{SOLVER_ANSWER:,} tokens a solver answer, at most {money(self.most_usd)} with every answer at its cap "
            "(LiteLLM's offline prices; compare --budget-usd)"
        )


def paper_estimate(
    task_spec: str, memory_spec: str, task_cap: int | None, memory_cap: int | None, memory_file: str | None
) -> PaperEstimate:
    """The estimate for the protocol on these models and caps (see the module)."""
    protocol = PRESETS[PRESET].protocol
    tasks = load_split(protocol["split"])
    runs, attempts = protocol["runs"], protocol["attempts"]
    puzzle = sum(len(puzzle_text(task)) for task in tasks) / len(tasks) / CHARS_PER_TOKEN
    memory = _file_tokens(memory_file)
    solver_calls = len(tasks) * runs * attempts * (1 + protocol["retries"])
    selection_calls = len(tasks) * runs
    solver_prompt = puzzle + SOLVER_OVERHEAD
    selection_prompt = puzzle + memory + SELECTION_OVERHEAD
    task_price, memory_price = price(task_spec), price(memory_spec)

    def dollars(solver_answer: float | None, selection_answer: float | None) -> float | None:
        if task_price is None or memory_price is None or solver_answer is None or selection_answer is None:
            return None
        solver = Tokens(round(solver_calls * solver_prompt), round(solver_calls * solver_answer), solver_calls)
        selection = Tokens(round(selection_calls * selection_prompt), round(selection_calls * selection_answer))
        return task_price.of(solver) + memory_price.of(selection)

    typical_solver = min(SOLVER_ANSWER, task_cap) if task_cap else SOLVER_ANSWER
    typical = dollars(typical_solver, (memory_cap or 1000) / 2)
    most = dollars(task_cap, memory_cap)
    return PaperEstimate(
        len(tasks), runs, attempts, solver_calls, selection_calls, solver_prompt, selection_prompt, typical, most
    )


def log_paper_estimate(options: Any) -> PaperEstimate | None:
    """With ``--preset arcmemo-paper``, log :func:`paper_estimate` for the options' models; None otherwise."""
    if getattr(options, "preset", None) != PRESET:
        return None
    task_spec = options.lm or "embedded"
    memory_spec = options.memory_lm or task_spec
    try:
        found = paper_estimate(task_spec, memory_spec, options.max_tokens, options.memory_max_tokens, options.memory)
    except Exception as exc:  # the estimate never stops a run (val100 unreadable here, say)
        log.info("no budget estimate for the ArcMemo paper's protocol: %s", exc)
        return None
    log.info("%s", found.line(task_spec, memory_spec))
    return found


def _file_tokens(path: str | None) -> float:
    if not path:
        return 0.0
    try:
        return Path(path).stat().st_size / CHARS_PER_TOKEN
    except OSError:
        return 0.0
