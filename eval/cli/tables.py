"""``python -m eval table2|table3|table4|table5``: the HDR paper's tables, run and printed in its shape.

    python -m eval table2 --levels 1,2,3 --lm openai/gpt-4o,embedded --runs 3
    python -m eval table3 --levels 1,2 --rows hdr,episodic_cot
    python -m eval table4 --memory-lms gemini/gemini-2.5-flash,openai/gpt-4o --lm openai/gpt-4o
    python -m eval table5 --levels 1,2,3 --memory-lm embedded

Finished cells are read back, never rerun: the same command again finishes a stopped table.
"""

from __future__ import annotations

import argparse
import shlex

from memreason.eval.experience_transfer.hypothesis_scoring import F1_MODES
from memreason.eval.experience_transfer.table_options import TableOptions
from memreason.eval.experience_transfer.table_specs import TABLES
from memreason.installed import command

from .options import Parser, add, add_budget_options, add_rate_options, path, text

__all__ = ["register"]

HINT = "rerun the same command to finish the missing cells"


def register(commands: argparse._SubParsersAction) -> None:
    for name, spec in TABLES.items():
        parser = commands.add_parser(name, help=spec.title.split(":")[0] + " of the HDR paper", description=spec.title)
        _options(parser, name)
        parser.set_defaults(table=name, handler=run, continue_hint=HINT)


def _options(parser: Parser, table: str) -> None:
    if table == "table3":
        add(
            parser,
            "--task",
            help="experience_transfer (default: the paper's levels), or an inductive task (acre, list_functions): "
            "one column, rows no memory / hdr / hdr_checked, --levels left out",
        )
    add(parser, "--levels")
    parser.add_argument("--rows", help="comma-separated programs to use as rows (default: the paper's rows)")
    if table == "table4":
        parser.add_argument(
            "--memory-lms", type=text("--memory-lms"), required=True, help="comma-separated memory LMs, one row each"
        )
        add(parser, "--lm", help="the fixed task LM (default: embedded)")
    elif table == "table5":
        add(parser, "--memory-lm", help="the LM that builds the memories (default: embedded)")
        parser.add_argument("--f1", default="parse", choices=F1_MODES, help="how hypotheses are read (default parse)")
        parser.add_argument("--judge-lm", type=text("--judge-lm"), help="LM for --f1 interpret|judge (default: the memory LM)")
    else:
        add(parser, "--lm", help="comma-separated task LMs, one column group each (default: embedded)")
        add(parser, "--memory-lm", help="LM for memory building (default: each task LM)")
    if table != "table5":
        parser.add_argument(
            "--compare",
            nargs=2,
            metavar=("ROW_A", "ROW_B"),
            help="paired tests of these two rows only, A against B in every column (rows by program; table4: by "
            "memory LM; default: every row against the first)",
        )
    add(parser, "--runs", help="repetitions per cell (mean and std)")
    add(parser, "--limit", help="first N test scenes per cell")
    add(parser, "--seed")
    add(parser, "--rules", type=path("--rules"))
    if table != "table5":
        add(parser, "--per-object", help="every row's reasoner labels each object and the count is computed in code")
        add(
            parser,
            "--retrieve-k",
            help="with --per-object: each object labelled in its own call, against its K nearest memory entries",
        )
    add(
        parser,
        "--program-state",
        type=str,
        action="append",
        default=[],
        metavar="PROGRAM=STATE.json",
        help="a DSPy state loaded into that row's program, e.g. a compiled consolidator "
        "(hdr=runs/compiled/.../program.json); repeatable, one per row",
    )
    add(parser, "--threads", help="scenes answered in parallel in each cell")
    _lm_settings(parser, table)
    add(
        parser,
        "--out",
        default=TableOptions.__dataclass_fields__["out"].default,
        help="where cells and tables go (default runs/tables)",
    )
    add(
        parser,
        "--cache",
        help="one DSPy response cache directory for every cell, so a request one cell asked (the same scene listed, "
        "the same memory read) is answered from it in the others (default: each cell's own dspy_cache)",
    )
    add(parser, "--no-progress")
    add(parser, "--no-report", help="do not write each cell's report.md and plots (the table is written all the same)")
    add_budget_options(parser, scope="the whole table (its cells together)")
    add_rate_options(parser)
    add(
        parser,
        "--mlflow",
        help="track the table in MLflow (bare: mlflow.db in --out's parent, runs/ by default; "
        "one run for the table, a nested run per cell it evaluates)",
    )


def _lm_settings(parser: Parser, table: str) -> None:
    """Each role's settings, applied to every cell: ``--lm-arg`` to every column's task LM, ``--memory-lm-arg`` to
    every memory LM, ``--preset`` and ``--lm-config`` beneath the flags given (table5 has no task LM: it refuses
    ``--lm-arg`` in one line)."""
    models = parser.add_argument_group("language models", "settings applied to every cell's LMs")
    add(models, "--api-base")
    add(models, "--memory-api-base")
    memory = "memory LM" if table == "table5" else "task LM"
    add(models, "--temperature", help=f"sampling temperature of every {memory}'s calls (default 0)")
    add(models, "--max-tokens", help=f"generation cap per call of every {memory}")
    if table == "table5":
        add(models, "--lm-arg", help=argparse.SUPPRESS)  # refused in one line: table5 has no task LM
    else:
        add(models, "--lm-arg", help="any other setting sent with every call of every column's task LM, repeated")
    add(
        models,
        "--memory-lm-arg",
        help="the same for every memory LM" + (" (and the judge's, on its model)" if table == "table5" else ""),
    )
    add(models, "--preset")
    add(models, "--lm-config")


def run(args: argparse.Namespace) -> int:
    from memreason.eval.experience_transfer.tables import run_table

    print(run_table(TableOptions.from_args(args), command=f"{command('eval')} {shlex.join(args.argv)}"))
    return 0
