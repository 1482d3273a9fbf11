"""The HDR paper's tables as data: each table's rows, its value, and what it does unlike the others.

A table's own behaviour is a field or a small method of its :class:`TableSpec` (the heading of its rows' column,
an average column, rows that are memory LMs, memories scored instead of scenes answered, ``--task``), so the
code that plans, runs and prints tables asks the spec and never names a table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EXTRA_LABELS", "INDUCTIVE_ROWS", "TABLES", "Row", "TableSpec", "inductive_rows"]


@dataclass(frozen=True)
class Row:
    """One row of a paper table: its label, the program behind it, and its check-mark columns."""

    label: str
    program: str
    marks: tuple[bool, ...] = ()


@dataclass(frozen=True)
class TableSpec:
    """One paper table: its title, check-mark columns, the paper's rows and its value ("accuracy", in percent, or
    "f1"), then what it does unlike the others.

    Args:
        heading: the heading of the rows' column.
        averaged: an "Ave." column, each row's mean over its cells.
        rows_are_memory_lms: one row per memory LM (``--memory-lms``), each running the paper's one program, named
            by its memory LM (in ``--compare`` too); the one task LM is the column group.
        takes_task: runs on an inductive task too (``--task``: one column, :data:`INDUCTIVE_ROWS`).
        extra_marks: the check marks of programs a user adds with ``--rows`` (unticked where absent).
    """

    title: str
    mark_names: tuple[str, ...]
    rows: tuple[Row, ...]
    value: str  # "accuracy" (percent) or "f1"
    heading: str = "Methods"
    averaged: bool = False
    rows_are_memory_lms: bool = False
    takes_task: bool = False
    extra_marks: Mapping[str, tuple[bool, ...]] = field(default_factory=dict, hash=False)

    @property
    def scores_memories(self) -> bool:
        """Whether the table scores memories (hypothesis F1): its LMs are memory LMs, it answers no scenes, and its
        values have no interval and no paired test."""
        return self.value == "f1"

    def row(self, program: str) -> Row:
        """The row of ``program``: the paper's, else one labelled from :data:`EXTRA_LABELS` with its extra marks."""
        paper = next((row for row in self.rows if row.program == program), None)
        marks = self.extra_marks.get(program, tuple(False for _ in self.mark_names))
        return paper or Row(EXTRA_LABELS.get(program, program), program, marks)

    def memory_lm_row(self, memory_lm: str) -> Row:
        """The row of one memory LM (``rows_are_memory_lms``): the paper's program, labelled by the LM."""
        return Row(memory_lm, self.rows[0].program)

    def row_name(self, row: Row | dict[str, Any]) -> str:
        """What ``--compare`` calls a row: its program (``rows_are_memory_lms``: its label, the memory LM)."""
        label, program = (row.label, row.program) if isinstance(row, Row) else (row["label"], row["program"])
        return label if self.rows_are_memory_lms else program


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
        heading="Memory",
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
        takes_task=True,
    ),
    "table4": TableSpec(
        "Table 4: HDR accuracy (%) by memory-consolidation LM, task LM fixed",
        (),
        (Row("HDR", "hdr"),),
        "accuracy",
        heading="Models",
        averaged=True,
        rows_are_memory_lms=True,
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
        extra_marks={
            "direct_hypothesis": (False, False),
            "two_stage": (True, False),
            "hdr": (True, True),
            "hdr_grounded": (True, True),
            "hdr_grounded_unrefined": (True, True),
        },
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


def inductive_rows(task: str) -> list[Row]:
    """Table 3's rows on an inductive task: those whose program runs on it."""
    from ..tasks import get_task  # the task registry when asked: the command line reads these specs at start

    return [row for row in INDUCTIVE_ROWS if row.program in get_task(task).programs()]
