"""What a table asks for (:class:`TableOptions`), and the error it raises on input the user can fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..harness.errors import UsageError
from ..harness.options import Options

__all__ = ["TableError", "TableOptions"]


class TableError(UsageError):
    """Input the user can fix, or a cell that failed; one line, exit code 2."""


@dataclass(kw_only=True)
class TableOptions(Options):
    """What a table asks for (``python -m eval table2..table5``): its rows, levels, LMs and the cells' options."""

    table: str
    task: str = "experience_transfer"  # table3 only: or an inductive task, one column, the inductive rows
    levels: list[int] = field(default_factory=lambda: [1, 2, 3])
    rows: str | None = None  # comma-separated programs (None: the paper's rows)
    lm: str | None = None  # comma-separated task LMs, one column group each (table4: the one task LM)
    memory_lm: str | None = None
    memory_lms: str | None = None  # table4: comma-separated memory LMs, one row each
    f1: str = "parse"  # table5: how hypotheses are read
    judge_lm: str | None = None
    runs: int = 1
    limit: int | None = None
    seed: int = 0
    rules: Path | None = None  # a rule table, or several comma-separated (a column group each, and their spread)
    per_object: bool = False
    retrieve_k: int | None = None
    program_state: list[str] = field(default_factory=list)  # PROGRAM=STATE.json
    threads: int = 1
    api_base: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    # each role's settings (--lm-arg, --memory-lm-arg, --lm-config, --preset: memreason.eval.cli.lm_settings), the
    # same for every column's task LM and every memory LM; each cell's config.json saves them as a single run does
    memory_api_base: str | None = None
    memory_temperature: float | None = None
    memory_max_tokens: int | None = None
    lm_args: dict[str, Any] = field(default_factory=dict)
    memory_lm_args: dict[str, Any] = field(default_factory=dict)
    preset: str | None = None
    lm_config: Path | None = None
    origins: dict[str, str] | None = field(default=None, metadata={"saved": False}, compare=False, repr=False)
    out: Path = Path("runs/tables")
    cache: Path | None = None  # one DSPy response cache for every cell (None: each cell's own dspy_cache)
    no_progress: bool = False
    no_report: bool = False  # the cells write no report.md (the table is written all the same)
    mlflow: str | None = None
    budget_tokens: int | None = None  # the whole table's spending limit, its cells together
    budget_usd: float | None = None
    rpm: int | None = None  # rate limits of every cell's task LM and memory LM, shared by the cells (memreason.lm.rate)
    tpm: int | None = None
    memory_rpm: int | None = None
    memory_tpm: int | None = None
    # two rows (programs; table4: memory LMs) tested against each other (None: each row against the first)
    compare: list[str] | None = None
    states: dict[str, tuple[str, str]] = field(default_factory=dict)  # program: (state path, sha256), set by reproduce
