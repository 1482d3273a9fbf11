"""The HDR paper's tables (``python -m eval table2|table3|table4|table5``), run and printed in its shape.

    python -m eval table2 --levels 1,2,3 --lm openai/gpt-4o,embedded --runs 3
    python -m eval table3 --levels 1,2 --rows hdr,episodic_cot
    python -m eval table4 --memory-lms gemini/gemini-2.5-flash,openai/gpt-4o --lm openai/gpt-4o
    python -m eval table5 --levels 1,2,3 --memory-lm embedded

A table is a grid of *cells*; a cell is one ordinary evaluation (:func:`run_cell`, what ``python -m eval <program>`` runs)
kept in ``<out>/cells/<program>-L<level>-<lm>...``. A cell that finished is read back, never
rerun, so tables share work (Table 5 reads the HDR memory of a Table 3 cell), and a table that
was stopped picks up where it was: rerunning the same command finishes the missing cells.
Table 5 needs only memories, so its cells run consolidation without answering scenes.

Each table is printed and saved as ``<out>/<table>.md`` and ``<out>/<table>.json``.

This module plans a table and runs it; the tables themselves are data (:mod:`.table_specs`), a cell is run in
:mod:`.table_cells` and the Markdown written in :mod:`.table_markdown`.

An accuracy cell shows its 95% CI over the scenes in brackets (Wilson's, or a bootstrap where scores are partial) (the cell's
``accuracy_ci``). Accuracy tables then test rows in pairs on the same scenes (the same column):
every row against the first row, or only the two rows ``compare`` names; McNemar's exact p on
right/wrong per scene, and the accuracy difference with its paired bootstrap CI and p
(:mod:`memreason.eval.paired`). Table 5's F1 belongs to a memory, not to scenes: no interval, no test.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from memreason.datasets.experience_transfer import load_rules
from memreason.files import write_text
from memreason.lm.spend import Spend
from memreason.programs import PROGRAMS

from ..harness.budget import add_recorded, check_prices, new_spend
from ..harness.lms import resolve_lms
from ..harness.runs import write_json
from ..harness.tuned import TunedError, reader_knobs, state_digest
from ..paired import compare_items, run_items
from ..tasks import get_task
from .hypothesis_scoring import F1_MODES
from .table_cells import accuracy_cell, cell_name, cell_options, f1_cell, memory_lm
from .table_markdown import column_head, column_heads, column_key, render_markdown
from .table_options import TableError, TableOptions
from .table_specs import TABLES, Row, TableSpec, inductive_rows

__all__ = [
    "TABLES",
    "Row",
    "TableError",
    "TableOptions",
    "TableSpec",
    "cell_name",
    "inductive_rows",
    "render_markdown",
    "reproduce",
    "run_table",
]

log = logging.getLogger(__name__)
NAME = "experience_transfer"  # the task this package runs

Plan = list[tuple[Row, str | None]]  # each row with its memory LM (None: each column's task LM, or none)
Cell = tuple[Row, str | None, int | str, str, str | None]  # row, memory LM, level (or task), LM, rule table


def run_table(options: TableOptions, command: str) -> str:
    """Run the missing cells of ``options.table`` (tracked in MLflow with ``options.mlflow``): its Markdown."""
    from ..harness.tracking import check_mlflow, store_uri, tracking

    check_mlflow(options)
    if options.mlflow is not None:  # the cells log to the table's store
        options.mlflow = store_uri(options.mlflow, options.out.resolve().parent)
    with tracking(
        options,
        options.out,
        name=options.table,
        params=options.as_dict(),
        artifacts=(f"{options.table}.md", f"{options.table}.json"),
    ):
        return reproduce(options, command)


def reproduce(args: TableOptions, command: str) -> str:
    """Run the missing cells of ``args.table``, then write and return its Markdown."""
    spec = TABLES[args.table]
    args = _on_task(spec, args)
    levels, rows = _levels(args), _rows(spec, args.rows, args.task)
    tables = _rule_tables_read(args.rules)
    title = _title(spec, args, tables)
    _check_roles(spec, args)
    column_lms, plan = _plan(spec, args, rows)
    knobs = {} if spec.scores_memories else reader_knobs(args.per_object, args.retrieve_k)
    args = replace(args, states=_states(args.program_state, [row.program for row, _ in plan], knobs))
    pairs = [] if spec.scores_memories else _pairs(spec, args, [row for row, _ in plan])
    _check_before_any_cell(spec, args, column_lms, plan)
    columns = _columns(levels, tables, column_lms)
    out_rows = _run_cells(spec, args, [(row, memory, *column_key(c)) for row, memory in plan for c in columns])
    table = _record(spec, args, title, command, columns, out_rows, pairs)
    return _write(args, table)


# -- planning --------------------------------------------------------------------------------


def _on_task(spec: TableSpec, args: TableOptions) -> TableOptions:
    """``args`` with its task: Experience-Transfer unless ``--task`` names an inductive task, which only a table
    that takes one runs (one column, the task; what only Experience-Transfer has is refused)."""
    if args.task is None:
        args = replace(args, task=NAME)
    if args.task == NAME:
        return args
    if not spec.takes_task:
        takers = ", ".join(name for name, s in TABLES.items() if s.takes_task)
        raise TableError(f"--task runs {takers} only; {args.table} is Experience-Transfer's")
    if not hasattr(get_task(args.task), "problems"):
        raise TableError(f"--task {args.task}: {args.table} runs on Experience-Transfer or a problem task")
    for flag, value in (("--rules", args.rules), ("--per-object", args.per_object), ("--retrieve-k", args.retrieve_k)):
        if value not in (None, False):
            raise TableError(f"{flag} is an Experience-Transfer option; --task {args.task} does not take it")
    if args.program_state:
        raise TableError(f"--program-state is an Experience-Transfer option; --task {args.task} does not take it")
    return args


def _levels(args: TableOptions) -> list[int | str]:
    """The table's levels: the Experience-Transfer levels asked for, or an inductive task's one column."""
    return list(args.levels) if args.task == NAME else [args.task]


def _rows(spec: TableSpec, text: str | None, task: str = NAME) -> list[Row]:
    inductive = task != NAME
    if text is None:
        return inductive_rows(task) if inductive else list(spec.rows)
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise TableError(f"--rows names no program, got {text!r}")
    for name in names:
        if inductive and name not in get_task(task).programs():
            raise TableError(f"--rows: {name!r} does not run on {task}")
        if not inductive and name not in get_task(task).programs():
            raise TableError(f"--rows: {name!r} is not an Experience-Transfer program")
    return [spec.row(name) for name in names]


def rule_tables(rules: Path | str | None) -> list[str | None]:
    """The rule tables ``--rules`` names, in its order (``[None]``: the paper's Table 1)."""
    if rules is None:
        return [None]
    names = list(dict.fromkeys(part.strip() for part in str(rules).split(",") if part.strip()))
    if not names:
        raise TableError(f"--rules names no rule table, got {str(rules)!r}")
    return names


def _rule_tables_read(rules: Path | str | None) -> list[str | None]:
    """:func:`rule_tables`, each read once now: a bad rules file or table name fails before any cell, in one line."""
    tables = rule_tables(rules)
    for name in tables:
        if name is not None:
            load_rules(name)
    return tables


def _title(spec: TableSpec, args: TableOptions, tables: list[str | None]) -> str:
    """The spec's title, then what this run changes: the task, per-object reasoning, retrieval, the rule tables."""
    inductive = args.task != NAME
    return (
        spec.title
        + (f", on {args.task} (each problem's own memory{_oracle_words(args.task)})" if inductive else "")
        + (", per-object reasoning" if args.per_object else "")
        + (f", each object against its {args.retrieve_k} nearest memory entries" if args.retrieve_k else "")
        + (f", rule table {tables[0]}" if tables != [None] and len(tables) == 1 else "")
        + (f", {len(tables)} rule tables ({', '.join(tables)})" if len(tables) > 1 else "")
    )


def _oracle_words(task: str) -> str:
    return "" if get_task(task).has_oracle else "; no oracle row: the task gives no true rule"


def _check_roles(spec: TableSpec, args: TableOptions) -> None:
    """What a table's roles take. A table that scores memories has no task LM (it builds memories and scores them):
    ``--lm-arg`` and a task model from ``--lm-config`` are refused in one line; a preset's task role is not used
    (said once). A table whose rows are memory LMs takes them from ``--memory-lms``, a flag, overriding a preset's or
    a file's memory model."""
    origins = args.origins or {}
    if spec.scores_memories:
        for key, label in origins.items():
            if (key == "lm" or key.startswith("lm_args.")) and not label.startswith("--preset"):
                raise TableError(
                    f"{label}: {args.table} has no task LM (it builds memories and scores them); give the memory LM's "
                    "settings with --memory-lm-arg (or a memory section in --lm-config)"
                )
        if args.preset is not None and args.lm is not None:
            log.info("%s builds memories only: the preset's task LM %s is not used", args.table, args.lm)
    elif spec.rows_are_memory_lms and args.memory_lm is not None:
        log.info(
            "%s: the memory LMs are --memory-lms (%s); %s's %s is not used",
            args.table,
            args.memory_lms,
            origins.get("memory_lm", "the"),
            args.memory_lm,
        )


def _plan(spec: TableSpec, args: TableOptions, rows: list[Row]) -> tuple[list[str], Plan]:
    """The column groups' LMs, and the rows with each row's memory LM: a memory LM per row (rows that are memory
    LMs, the one task LM a column), the memory LM as the column (a table that scores memories), else the task LMs
    as columns and ``--memory-lm`` (or each column's own) for every row."""
    if spec.rows_are_memory_lms:
        return [args.lm or "embedded"], [(spec.memory_lm_row(m), m) for m in _lms(args.memory_lms)]
    if spec.scores_memories:
        if args.f1 not in F1_MODES:
            raise TableError(f"--f1 must be one of {', '.join(F1_MODES)}, got {args.f1!r}")
        return [args.memory_lm or "embedded"], [(row, None) for row in rows]
    return _lms(args.lm), [(row, args.memory_lm) for row in rows]


def _columns(levels: list[int | str], tables: list[str | None], column_lms: list[str]) -> list[dict[str, Any]]:
    """The table's columns, in order: each level (or task), each rule table in it, each column LM in that."""
    return [
        {"level": level, "lm": lm, **({"rules": rules} if rules is not None else {})}
        for level in levels
        for rules in tables
        for lm in column_lms
    ]


def _lms(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "embedded").split(",") if part.strip()]


def _states(specs: list[str], programs: list[str], knobs: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """``--program-state PROGRAM=PATH`` options as {program: (path, sha256)}, each checked by loading it into the
    program built with the table's reader ``knobs`` (the cells' own)."""
    states: dict[str, tuple[str, str]] = {}
    for spec in specs:
        program, sep, path = spec.partition("=")
        if not sep or not path:
            raise TableError(f"--program-state takes PROGRAM=STATE.json, got {spec!r}")
        if program not in programs:
            raise TableError(f"--program-state {spec}: {program!r} is not a row of this table ({', '.join(programs)})")
        try:
            digest = state_digest(PROGRAMS[program].build(**knobs), program, Path(path))
        except TunedError as exc:
            raise TableError(str(exc)) from None
        states[program] = (path, digest)
    return states


def _pairs(spec: TableSpec, args: TableOptions, rows: list[Row]) -> list[tuple[str, str]]:
    """The rows to test against each other, (A, B) by :meth:`TableSpec.row_name`: ``--compare A B``, else each row
    against the first."""
    names = list(dict.fromkeys(spec.row_name(row) for row in rows))
    if not args.compare:
        return [(name, names[0]) for name in names[1:]]
    if len(args.compare) != 2 or args.compare[0] == args.compare[1]:
        raise TableError(f"--compare takes two different rows, got {' '.join(args.compare)}")
    for name in args.compare:
        if name not in names:
            raise TableError(f"--compare {name}: not a row of this table ({', '.join(names)})")
    return [(args.compare[0], args.compare[1])]


def _check_before_any_cell(spec: TableSpec, args: TableOptions, column_lms: list[str], plan: Plan) -> None:
    """Before any model work (hours may follow): the prices under ``--budget-usd``, and every LM a cell will use
    resolved with the roles' settings as its cell will resolve it (an unknown LM, a missing key, a setting a
    model's provider refuses), once each; a table that scores memories has memory LMs alone, and a judge's."""
    judges = [args.judge_lm or column_lms[0]] if spec.scores_memories and args.f1 != "parse" else []
    check_prices(args.budget_usd, [*column_lms, *(m for _, m in plan if m), *judges])
    if spec.scores_memories:
        for lm in dict.fromkeys([*column_lms, *judges]):
            memory_lm(lm, args)
        return
    cells = [(lm, memory or lm) for _, memory in plan for lm in column_lms]
    for task, memory in dict.fromkeys(cells):
        resolve_lms(cell_options(None, 1, task, memory, Path("."), args))


# -- running ---------------------------------------------------------------------------------


def _run_cells(spec: TableSpec, args: TableOptions, todo: list[Cell]) -> list[dict[str, Any]]:
    """Each cell run or read back, in order (``spend``: the table's limit, shared by its cells): the table's rows."""
    cells_dir = args.out / "cells"
    several_tables = len({rules for *_, rules in todo}) > 1
    spend = _table_spend(args, todo, cells_dir, f1=spec.scores_memories)
    out_rows: list[dict[str, Any]] = []
    for i, (row, memory, level, lm, rules) in enumerate(todo, 1):
        log.info("[%d/%d] %s %s %s%s", i, len(todo), row.program, column_head(level), lm, f" {rules}" if several_tables else "")
        on_table = _on_table(args, rules)
        if spec.scores_memories:
            cell = f1_cell(row.program, level, lm, cells_dir, on_table, spend)
        else:
            cell = accuracy_cell(row.program, level, lm, memory or lm, cells_dir, on_table, spend)
        entry = next((r for r in out_rows if r["label"] == row.label and r["program"] == row.program), None)
        if entry is None:
            entry = {"label": row.label, "program": row.program, "marks": list(row.marks), "cells": []}
            out_rows.append(entry)
        entry["cells"].append({"level": level, "lm": lm, **({"rules": rules} if rules is not None else {}), **cell})
    return out_rows


def _table_spend(args: TableOptions, todo: list[Cell], cells_dir: Path, *, f1: bool) -> Spend | None:
    """The table's spending limit, shared by its cells, holding what the cells' records hold (None without a cap)."""
    spend = new_spend(args)
    if spend is None:
        return None
    for row, memory, level, lm, rules in todo:
        name = cell_name(row.program, level, lm, memory or lm, _on_table(args, rules))
        add_recorded(spend, cells_dir / (f"memory-{name}" if f1 else name), lm, memory or lm)  # Table 5: its own memories
    log.info("budget: %s has %d cells; what their records hold: %s", args.table, len(todo), spend.describe())
    return spend


def _on_table(args: TableOptions, rules: str | None) -> TableOptions:
    """``args`` for the cells of one rule table."""
    if (str(args.rules) if args.rules is not None else None) == rules:
        return args
    return replace(args, rules=None if rules is None else Path(rules))


def _comparisons(
    spec: TableSpec, rows: list[dict[str, Any]], columns: list[dict[str, Any]], pairs: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Each pair of rows tested in each column (the same scenes), from the cells' ``examples.jsonl``."""
    by_name = {spec.row_name(row): row for row in rows}
    heads = column_heads(columns)
    found = []
    for a, b in pairs:
        for column, where in zip(columns, heads):
            cells = [next((c for c in by_name[name]["cells"] if column_key(c) == column_key(column)), None) for name in (a, b)]
            items = [run_items(Path(c["cell"])) if c else None for c in cells]
            if items[0] is None or items[1] is None:
                continue
            test = compare_items(items[0], items[1])
            place = {"level": column["level"], "lm": column["lm"], **({"rules": column["rules"]} if "rules" in column else {})}
            found.append({"a": a, "b": b, **place, "where": where, **test.as_dict()})
    return found


def _record(
    spec: TableSpec,
    args: TableOptions,
    title: str,
    command: str,
    columns: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    pairs: list[tuple[str, str]],
) -> dict[str, Any]:
    """The table as ``<out>/<table>.json`` keeps it: its columns and rows of cells, then the F1 mode of a table that
    scores memories, or the rows' paired tests."""
    table = {
        "table": args.table,
        "title": title,
        "value": spec.value,
        "command": command,
        "mark_names": list(spec.mark_names),
        "columns": columns,
        "rows": rows,
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    if spec.scores_memories:
        table["f1_mode"] = args.f1
    else:
        table["compare"] = list(args.compare) if args.compare else None
        table["comparisons"] = _comparisons(spec, rows, columns, pairs)
    return table


def _write(args: TableOptions, table: dict[str, Any]) -> str:
    """Write ``<out>/<table>.json`` and its Markdown ``<out>/<table>.md``; the Markdown."""
    markdown = render_markdown(table)
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / f"{args.table}.json", table)
    write_text(args.out / f"{args.table}.md", markdown)
    return markdown
