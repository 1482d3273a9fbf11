"""What the HDR paper's tables are, apart from running them: their rows and titles (:data:`TABLES`) and a table's
options (:class:`TableOptions`), which the command line reads to build its parser; :mod:`.tables` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..harness.options import Options

__all__ = ["EXTRA_LABELS", "EXTRA_MARKS", "INDUCTIVE_ROWS", "TABLES", "Row", "TableOptions", "TableSpec"]


@dataclass(frozen=True)
class Row:
    """One row of a paper table: its label, the program behind it, and its check-mark columns."""

    label: str
    program: str
    marks: tuple[bool, ...] = ()


@dataclass(frozen=True)
class TableSpec:
    title: str
    mark_names: tuple[str, ...]
    rows: tuple[Row, ...]
    value: str  # "accuracy" (percent) or "f1"


TABLES: dict[str, TableSpec] = {
    "table2": TableSpec(
        "Table 2: accuracy (%) with different memories (episodic: all raw episodes; semantic: oracle hypotheses)",
        ("CoT",),
        (
            Row("Episodic memory", "episodic", (False,)),
            Row("Semantic memory", "semantic_oracle", (False,)),
            Row("Episodic + Semantic", "episodic_semantic_oracle", (False,)),
            Row("Episodic memory", "episodic_cot", (True,)),
            Row("Semantic memory", "semantic_oracle_cot", (True,)),
            Row("Episodic + Semantic", "episodic_semantic_oracle_cot", (True,)),
        ),
        "accuracy",
    ),
    "table3": TableSpec(
        "Table 3: accuracy (%) of HDR against the baselines",
        (),
        (
            Row("Episodic + Semantic", "episodic_semantic_oracle_cot"),
            Row("Reflection (Individual)", "reflexion_individual"),
            Row("Reflection (All)", "reflexion_all"),
            Row("HDR (Ours)", "hdr"),
        ),
        "accuracy",
    ),
    "table4": TableSpec(
        "Table 4: HDR accuracy (%) by memory-consolidation LM, task LM fixed",
        (),
        (Row("HDR", "hdr"),),
        "accuracy",
    ),
    "table5": TableSpec(
        "Table 5: hypothesis F1 by method (FE: factor extraction, IR: iterative refinement)",
        ("FE", "IR"),
        (
            Row("Direct hypothesis", "direct_hypothesis", (False, False)),
            Row("Simple two-stage", "two_stage", (True, False)),
            Row("HDR (Ours)", "hdr", (True, True)),
        ),
        "f1",
    ),
}

# Table 3 on an inductive task (--task acre|list_functions): each problem's own memory; the oracle row where the
# task gives its true rule (ACRE: the blickets its experiments settle; List Functions names no function).
INDUCTIVE_ROWS = (
    Row("No memory (the examples only)", "episodic_cot"),
    Row("HDR", "hdr"),
    Row("HDR, hypotheses checked in code", "hdr_checked"),
    Row("Episodic + Semantic: the true rule (CoT)", "episodic_semantic_oracle_cot"),
)

# Labels for rows a user adds with --rows (any Experience-Transfer program may be a row).
EXTRA_LABELS = {
    "episodic": "Episodic memory",
    "episodic_cot": "Episodic memory (CoT)",
    "semantic_oracle": "Semantic memory",
    "semantic_oracle_cot": "Semantic memory (CoT)",
    "episodic_semantic_oracle": "Episodic + Semantic",
    "episodic_semantic_oracle_cot": "Episodic + Semantic (CoT)",
    "reflexion_individual": "Reflection (Individual)",
    "reflexion_all": "Reflection (All)",
    "direct_hypothesis": "Direct hypothesis",
    "two_stage": "Simple two-stage",
    "hdr": "HDR (Ours)",
    "hdr_grounded": "HDR, rules checked by code",
    "hdr_grounded_unrefined": "HDR, rules checked by code, unrefined",
    "rule_learner": "Rule learner, no LM (reference)",
    "hdr_checked": "HDR, hypotheses checked in code",
}
EXTRA_MARKS = {
    "table5": {
        "direct_hypothesis": (False, False),
        "two_stage": (True, False),
        "hdr": (True, True),
        "hdr_grounded": (True, True),
        "hdr_grounded_unrefined": (True, True),
    }
}


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
