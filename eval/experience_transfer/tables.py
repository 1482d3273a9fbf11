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

An accuracy cell shows its 95% CI over the scenes in brackets (Wilson's, or a bootstrap where scores are partial) (the cell's
``accuracy_ci``). Accuracy tables then test rows in pairs on the same scenes (the same column):
every row against the first row, or only the two rows ``compare`` names; McNemar's exact p on
right/wrong per scene, and the accuracy difference with its paired bootstrap CI and p
(:mod:`memreason.eval.paired`). Table 5's F1 belongs to a memory, not to scenes: no interval, no test.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from memreason.datasets.experience_transfer import load_rules
from memreason.files import write_text
from memreason.lm import LMChoice, resolve_lm
from memreason.lm.spend import Spend
from memreason.programs import PROGRAMS

from ..harness.budget import add_recorded, capped, check_prices, new_spend, stopped_by_budget
from ..harness.errors import UsageError
from ..harness.lms import adapted_records, resolve_lms, role_given, with_limits
from ..harness.runs import use_response_cache, write_json
from ..harness.tuned import TunedError, reader_knobs, state_digest
from ..metrics import mean_std
from ..paired import compare_items, format_p, headline_ci, run_items
from ..stats import METHOD
from ..tasks import get_task
from .evaluate import EvaluateOptions
from .hypothesis_scoring import F1_MODES, memory_f1
from .run import ExperienceTransferConfig, memorize
from .table_specs import EXTRA_LABELS, EXTRA_MARKS, INDUCTIVE_ROWS, TABLES, Row, TableOptions, TableSpec

__all__ = ["TABLES", "Row", "TableError", "TableOptions", "TableSpec", "cell_name", "render_markdown", "reproduce", "run_table"]

log = logging.getLogger(__name__)
NAME = "experience_transfer"  # the task this package runs


def inductive_rows(task: str) -> list[Row]:
    """Table 3's rows on an inductive task: those whose program runs on it."""
    return [row for row in INDUCTIVE_ROWS if row.program in get_task(task).programs()]


class TableError(UsageError):
    """Input the user can fix, or a cell that failed; one line, exit code 2."""


# -- planning --------------------------------------------------------------------------------


def _rows(spec: TableSpec, text: str | None, task: str = "experience_transfer") -> list[Row]:
    inductive = task != NAME
    if text is None:
        return inductive_rows(task) if inductive else list(spec.rows)
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise TableError(f"--rows names no program, got {text!r}")
    rows = []
    for name in names:
        if inductive and name not in get_task(task).programs():
            raise TableError(f"--rows: {name!r} does not run on {task}")
        if not inductive and name not in get_task(task).programs():
            raise TableError(f"--rows: {name!r} is not an Experience-Transfer program")
        paper = next((row for row in spec.rows if row.program == name), None)
        marks = EXTRA_MARKS.get(spec_name(spec), {}).get(name, tuple(False for _ in spec.mark_names))
        rows.append(paper or Row(EXTRA_LABELS.get(name, name), name, marks))
    return rows


def _oracle_words(task: str) -> str:
    return "" if get_task(task).has_oracle else "; no oracle row: the task gives no true rule"


def spec_name(spec: TableSpec) -> str:
    return next(name for name, s in TABLES.items() if s is spec)


def _lms(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "embedded").split(",") if part.strip()]


def slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec)


def rule_tables(rules: Path | str | None) -> list[str | None]:
    """The rule tables ``--rules`` names, in its order (``[None]``: the paper's Table 1)."""
    if rules is None:
        return [None]
    names = list(dict.fromkeys(part.strip() for part in str(rules).split(",") if part.strip()))
    if not names:
        raise TableError(f"--rules names no rule table, got {str(rules)!r}")
    return names


def _on_table(args: TableOptions, rules: str | None) -> TableOptions:
    """``args`` for the cells of one rule table."""
    if (str(args.rules) if args.rules is not None else None) == rules:
        return args
    return replace(args, rules=None if rules is None else Path(rules))


def _key(column: dict[str, Any]) -> tuple[Any, str, str | None]:
    """A column's (or a cell's) place: level, LM and rule table (tables written before the last had none)."""
    return column["level"], column["lm"], column.get("rules")


def cell_name(program: str, level: int | str, task: str, memory: str, args: TableOptions) -> str:
    """A cell's directory name: everything that changes its result, defaults left out (``level``: an inductive
    task's name in its table)."""
    name = f"{program}-L{level}-{slug(task)}" if isinstance(level, int) else f"{program}-{level}-{slug(task)}"
    if memory != task:
        name += f"-mem-{slug(memory)}"
    if args.rules is not None:
        name += f"-rules-{slug(Path(args.rules).stem)}"
    if args.per_object:
        name += "-per-object"
    if args.retrieve_k is not None:
        name += f"-k{args.retrieve_k}"
    state = args.states.get(program)
    if state is not None:
        name += f"-state-{state[1][:8]}"  # the state file's sha256: another state, another cell
    settings = lm_settings(args)
    if settings:  # each role's own settings: others, another cell
        name += "-lm-" + hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]
    for flag, value, default in (
        ("seed", args.seed, 0),
        ("limit", args.limit, None),
        ("runs", args.runs, 1),
        ("t", args.temperature, 0.0),
        ("max", args.max_tokens, None),
    ):
        if value != default:
            name += f"-{flag}{value}"
    return name


def lm_settings(args: TableOptions) -> dict[str, Any]:
    """The roles' settings that change a cell's results besides the models, the temperature and the cap (which a
    cell's name shows as they are): keywords and the memory role's own sampling; empty when none is set."""
    found = {
        "lm_args": dict(args.lm_args or {}),
        "memory_lm_args": dict(args.memory_lm_args or {}),
        "memory_temperature": args.memory_temperature,
        "memory_max_tokens": args.memory_max_tokens,
    }
    return {key: value for key, value in found.items() if value not in (None, {})}


# -- running ---------------------------------------------------------------------------------


def reproduce(args: TableOptions, command: str) -> str:
    """Run the missing cells of ``args.table``, then write and return its Markdown."""
    spec = TABLES[args.table]
    if args.task is None:
        args = replace(args, task=NAME)
    inductive = args.task != NAME
    if inductive:
        _check_inductive_table(args)
    levels, rows = ([args.task] if inductive else list(args.levels)), _rows(spec, args.rows, args.task)
    tables = rule_tables(args.rules)
    for rules in tables:
        if rules is not None:
            load_rules(rules)  # a bad rules file or table name fails now, in one line
    title = (
        spec.title
        + (f", on {args.task} (each problem's own memory{_oracle_words(args.task)})" if inductive else "")
        + (", per-object reasoning" if args.per_object else "")
        + (f", each object against its {args.retrieve_k} nearest memory entries" if args.retrieve_k else "")
        + (f", rule table {tables[0]}" if tables != [None] and len(tables) == 1 else "")
        + (f", {len(tables)} rule tables ({', '.join(tables)})" if len(tables) > 1 else "")
    )
    _check_roles(args)
    if args.table == "table4":
        column_lms = [args.lm or "embedded"]
        row_memories = _lms(args.memory_lms)
        plan = [(Row(m, "hdr"), m) for m in row_memories]
    elif args.table == "table5":
        column_lms = [args.memory_lm or "embedded"]
        plan = [(row, None) for row in rows]
        if args.f1 not in F1_MODES:
            raise TableError(f"--f1 must be one of {', '.join(F1_MODES)}, got {args.f1!r}")
    else:
        column_lms = _lms(args.lm)
        plan = [(row, args.memory_lm) for row in rows]
    states = _states(
        args.program_state,
        [row.program for row, _ in plan],
        reader_knobs(args.per_object, args.retrieve_k) if spec.value != "f1" else {},
    )
    args = replace(args, states=states)
    pairs = _pairs(args, [row for row, _ in plan]) if spec.value == "accuracy" else []
    judge = [args.judge_lm or column_lms[0]] if args.table == "table5" and args.f1 != "parse" else []
    check_prices(args.budget_usd, [*column_lms, *(m for _, m in plan if m), *judge])  # before any model work
    if spec.value == "f1":
        _check_lms([(None, lm, lm) for lm in column_lms] + [(None, j, j) for j in judge], args, memory_only=True)
    else:
        _check_lms([(row.program, lm, memory or lm) for row, memory in plan for lm in column_lms], args)

    cells_dir = args.out / "cells"
    todo = [(row, memory, level, lm, rules) for row, memory in plan for level in levels for rules in tables for lm in column_lms]
    spend = _table_spend(args, todo, cells_dir, f1=spec.value == "f1")
    out_rows: list[dict[str, Any]] = []
    for i, (row, memory, level, lm, rules) in enumerate(todo, 1):
        log.info("[%d/%d] %s %s %s%s", i, len(todo), row.program, _head(level), lm, f" {rules}" if len(tables) > 1 else "")
        on_table = _on_table(args, rules)
        if spec.value == "f1":
            cell = _f1_cell(row.program, level, lm, cells_dir, on_table, spend)
        else:
            cell = _accuracy_cell(row.program, level, lm, memory or lm, cells_dir, on_table, spend)
        entry = next((r for r in out_rows if r["label"] == row.label and r["program"] == row.program), None)
        if entry is None:
            entry = {"label": row.label, "program": row.program, "marks": list(row.marks), "cells": []}
            out_rows.append(entry)
        entry["cells"].append({"level": level, "lm": lm, **({"rules": rules} if rules is not None else {}), **cell})

    columns = [
        {"level": level, "lm": lm, **({"rules": rules} if rules is not None else {})}
        for level in levels
        for rules in tables
        for lm in column_lms
    ]
    table = {
        "table": args.table,
        "title": title,
        "value": spec.value,
        "command": command,
        "mark_names": list(spec.mark_names),
        "columns": columns,
        "rows": out_rows,
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    if args.table == "table5":
        table["f1_mode"] = args.f1
    else:
        table["compare"] = list(args.compare) if args.compare else None
        table["comparisons"] = _comparisons(args.table, out_rows, columns, pairs)
    markdown = render_markdown(table)
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / f"{args.table}.json", table)
    write_text(args.out / f"{args.table}.md", markdown)
    return markdown


def row_name(row: Row | dict[str, Any], table: str) -> str:
    """What ``--compare`` calls a row: its program (table4: its memory LM, every row being HDR)."""
    label, program = (row.label, row.program) if isinstance(row, Row) else (row["label"], row["program"])
    return label if table == "table4" else program


def _pairs(args: TableOptions, rows: list[Row]) -> list[tuple[str, str]]:
    """The rows to test against each other, (A, B) by :func:`row_name`: ``--compare A B``, else each row against the first."""
    names = list(dict.fromkeys(row_name(row, args.table) for row in rows))
    if not args.compare:
        return [(name, names[0]) for name in names[1:]]
    if len(args.compare) != 2 or args.compare[0] == args.compare[1]:
        raise TableError(f"--compare takes two different rows, got {' '.join(args.compare)}")
    for name in args.compare:
        if name not in names:
            raise TableError(f"--compare {name}: not a row of this table ({', '.join(names)})")
    return [(args.compare[0], args.compare[1])]


def _comparisons(
    table: str, rows: list[dict[str, Any]], columns: list[dict[str, Any]], pairs: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Each pair of rows tested in each column (the same scenes), from the cells' ``examples.jsonl``."""
    by_name = {row_name(row, table): row for row in rows}
    heads = _heads(columns)
    found = []
    for a, b in pairs:
        for column, where in zip(columns, heads):
            cells = [next((c for c in by_name[name]["cells"] if _key(c) == _key(column)), None) for name in (a, b)]
            items = [run_items(Path(c["cell"])) if c else None for c in cells]
            if items[0] is None or items[1] is None:
                continue
            test = compare_items(items[0], items[1])
            place = {"level": column["level"], "lm": column["lm"], **({"rules": column["rules"]} if "rules" in column else {})}
            found.append({"a": a, "b": b, **place, "where": where, **test.as_dict()})
    return found


def _table_spend(args: TableOptions, todo: list[tuple[Row, str | None, int, str]], cells_dir: Path, *, f1: bool) -> Spend | None:
    """The table's spending limit, shared by its cells, holding what the cells' records hold (None without a cap)."""
    spend = new_spend(args)
    if spend is None:
        return None
    for row, memory, level, lm, rules in todo:
        name = cell_name(row.program, level, lm, memory or lm, _on_table(args, rules))
        add_recorded(spend, cells_dir / (f"memory-{name}" if f1 else name), lm, memory or lm)  # Table 5: its own memories
    log.info("budget: %s has %d cells; what their records hold: %s", args.table, len(todo), spend.describe())
    return spend


def _check_inductive_table(args: TableOptions) -> None:
    """Table 3 on an inductive task: one column, the task; what only Experience-Transfer has is refused."""
    if args.table != "table3":
        raise TableError(f"--task runs table3 only; {args.table} is Experience-Transfer's")
    if not hasattr(get_task(args.task), "problems"):
        raise TableError(f"--task {args.task}: table3 runs on Experience-Transfer or a problem task")
    for flag, value in (("--rules", args.rules), ("--per-object", args.per_object), ("--retrieve-k", args.retrieve_k)):
        if value not in (None, False):
            raise TableError(f"{flag} is an Experience-Transfer option; --task {args.task} does not take it")
    if args.program_state:
        raise TableError(f"--program-state is an Experience-Transfer option; --task {args.task} does not take it")


def _finished(directory: Path) -> bool:
    """Whether an accuracy cell finished: its results are written, and not those of a run stopped at its spending limit."""
    path = directory / "results.json"
    return path.exists() and not stopped_by_budget(_read_json(path))


def _check_roles(args: TableOptions) -> None:
    """What a table's roles take. Table 5 has no task LM (it builds memories and scores them): ``--lm-arg`` and a
    task model from ``--lm-config`` are refused in one line; a preset's task role is not used (said once). Table 4's
    memory LMs are its rows (``--memory-lms``, a flag, overriding a preset's or a file's memory model)."""
    origins = args.origins or {}
    if args.table == "table5":
        for key, label in origins.items():
            if (key == "lm" or key.startswith("lm_args.")) and not label.startswith("--preset"):
                raise TableError(
                    f"{label}: table5 has no task LM (it builds memories and scores them); give the memory LM's "
                    "settings with --memory-lm-arg (or a memory section in --lm-config)"
                )
        if args.preset is not None and args.lm is not None:
            log.info("table5 builds memories only: the preset's task LM %s is not used", args.lm)
    elif args.table == "table4" and args.memory_lm is not None:
        log.info(
            "table4: the memory LMs are --memory-lms (%s); %s's %s is not used",
            args.memory_lms,
            origins.get("memory_lm", "the"),
            args.memory_lm,
        )


def _check_lms(cells: list[tuple[str | None, str, str]], args: TableOptions, *, memory_only: bool = False) -> None:
    """Fail on an unknown LM, a missing key or a setting a model's provider refuses before any cell runs (hours may
    follow): each (program, task LM, memory LM) resolved with the roles' settings as its cell will be, once each
    (``memory_only``: Table 5, whose LMs are memory LMs alone)."""
    for task, memory in dict.fromkeys((task, memory) for _, task, memory in cells):
        if memory_only:
            _memory_lm(task, args)
        else:
            resolve_lms(_cell_options(None, 1, task, memory, Path("."), args))


def _memory_lm(spec: str, args: TableOptions) -> LMChoice:
    """The LM ``spec`` in the memory role (Table 5's memory builder, and its judge): the memory role's settings,
    the table's temperature and cap where the role has none of its own, its address, its rate limits (``--memory-rpm``
    and ``--memory-tpm`` where given, else ``--rpm`` and ``--tpm``: one limiter per model in the process, so the
    judge on the memory LM's model waits with the memory builder)."""
    given = role_given(args, "memory")
    task_given = role_given(args, "task")
    for key, own in (("temperature", args.memory_temperature), ("max_tokens", args.memory_max_tokens)):
        if own is None and key in task_given:
            given[key] = task_given[key]
    choice = resolve_lm(
        spec,
        api_base=args.memory_api_base or args.api_base,
        temperature=args.temperature if args.memory_temperature is None else args.memory_temperature,
        max_tokens=args.max_tokens if args.memory_max_tokens is None else args.memory_max_tokens,
        extra=dict(args.memory_lm_args or {}),
        given=given,
        role="memory LM",
    )
    _, choice = with_limits(choice, choice, args)
    return choice


def _cell_options(
    program: str | None, level: int | str, task: str, memory: str, directory: Path, args: TableOptions
) -> EvaluateOptions:
    """The options of one accuracy cell: what ``python -m eval <program>`` would be given for it (the table's own
    options where an evaluation has them, the cell's program, level, LMs and directory over them)."""
    state = args.states.get(program) if program else None
    inductive = not isinstance(level, int)
    return EvaluateOptions.from_args(
        args,
        program=program or "",
        level=None if inductive else level,
        task=level if inductive else "experience_transfer",
        lm=task,
        memory_lm=memory if memory != task else None,
        out=directory,
        lm_args=dict(args.lm_args or {}),
        memory_lm_args=dict(args.memory_lm_args or {}),
        rules=str(args.rules) if args.rules else None,
        program_state=Path(state[0]) if state else None,
    )


def _accuracy_cell(
    program: str, level: int, task: str, memory: str, cells_dir: Path, args: TableOptions, spend: Spend | None = None
) -> dict[str, Any]:
    """Evaluate one (program, level, LMs) cell with :func:`run_cell`, or read it back (``spend``: the table's limit)."""
    directory = cells_dir / cell_name(program, level, task, memory, args)
    if not _finished(directory):
        inductive = not isinstance(level, int)
        get_task(level if inductive else "experience_transfer").run(
            _cell_options(program, level, task, memory, directory, args),
            spend=spend,
        )
    results = _read_json(directory / "results.json")
    accuracy = results["accuracy"]
    ci = headline_ci(results, None if results.get("accuracy_ci") else run_items(directory, results))
    return {
        "value": 100 * accuracy["mean"],
        "std": 100 * accuracy["std"],
        "ci": None if ci is None else [100 * ci[0], 100 * ci[1]],  # 95% CI over scenes (memreason.eval.stats.intervals)
        "examples": results["examples"],
        "tokens": results["tokens"],
        "wall_seconds": results.get("wall_seconds"),
        "cell": str(directory),
        **_rounds(directory),
    }


def _rounds(directory: Path) -> dict[str, Any]:
    """What a cell's checked memories did, over its runs (``hdr_grounded``'s record, which has rounds of counts):
    ``{"rounds": {"rounds", "nothing_new", "rules", "memories", "empty"}}``; ``{}`` for other programs."""
    records = [_read_json(path) for path in sorted(directory.glob("memory-run*.json"))]
    records = [r for r in records if isinstance(r.get("rounds"), list) and isinstance(r.get("rules"), list)]
    if not records:
        return {}
    rounds = [round_ for record in records for round_ in record["rounds"] if isinstance(round_.get("counts"), dict)]
    return {
        "rounds": {
            "rounds": len(rounds),
            "nothing_new": sum(round_["counts"].get("new") == 0 for round_ in rounds),  # every proposal a repeat, or none
            "rules": sum(len(record["rules"]) for record in records),
            "memories": len(records),
            "empty": sum(not record["rules"] for record in records),  # memories that verified no rule
        }
    }


def _f1_cell(
    program: str, level: int, memory: str, cells_dir: Path, args: TableOptions, spend: Spend | None = None
) -> dict[str, Any]:
    """Hypothesis F1 of the memories ``program`` builds at ``level``, one per run.

    A finished accuracy cell with the same memory LM lends its memories; otherwise the
    memories are built here, without answering scenes, one file per run (kept on a crash).
    """
    config = ExperienceTransferConfig(
        program=program, level=level, runs=args.runs, seed=args.seed, rules=str(args.rules) if args.rules else None
    )
    data = config.load_data()
    lender = cells_dir / cell_name(program, level, memory, memory, args)
    directory = cells_dir / f"memory-{cell_name(program, level, memory, memory, args)}"
    files = [lender / f"memory-run{r}.json" for r in range(args.runs)]
    if not all(f.exists() for f in files):
        files = [directory / f"memory-run{r}.json" for r in range(args.runs)]
        missing = [r for r, f in enumerate(files) if not f.exists()]
        if missing:
            _build_memories(program, data, memory, directory, missing, args, spend)
    judge = None
    if args.f1 != "parse":
        judge = _memory_lm(args.judge_lm or memory, args)  # a memory-role LM: its settings, its rate limits
        judge = capped(judge, "judge", spend)  # its calls wait for its limiter and count against the table's limit
    scores, spent, wall = [], {"prompt": 0, "completion": 0, "total": 0, "calls": 0}, 0.0
    for f in files:
        record = _read_json(f)
        wall += record.get("wall_seconds") or 0.0  # building the memory; scoring it by parse costs nothing
        score = memory_f1(record, data, args.f1, judge)
        scores.append(score)
        write_json(f.with_name(f.stem + f"-f1-{args.f1}.json"), score)
        for key in spent:
            spent[key] += record.get("tokens", {}).get(key, 0)
    mean, std = mean_std([s["f1"] for s in scores])
    return {
        "value": mean,
        "std": std,
        "precision": mean_std([s["precision"] for s in scores])[0],
        "recall": mean_std([s["recall"] for s in scores])[0],
        "hypotheses": [len(s["hypotheses"]) for s in scores],
        "tokens": {"memory": spent, "task": {key: 0 for key in spent}},
        "wall_seconds": round(wall, 2),
        "cell": str(files[0].parent),
    }


def _build_memories(
    program: str, data, memory_spec: str, directory: Path, runs: list[int], args: TableOptions, spend: Spend | None = None
) -> None:
    memory = _memory_lm(memory_spec, args)
    directory.mkdir(parents=True, exist_ok=True)
    _write_memory_config(program, data, memory, directory, args)
    use_response_cache(args.cache or directory / "dspy_cache")
    state = args.states.get(program)
    memorize(program, data, memory, directory, runs, program_state=state[0] if state else None, spend=spend)


def _write_memory_config(program: str, data, memory: LMChoice, directory: Path, args: TableOptions) -> None:
    """A Table 5 memory directory's ``config.json``: the memory LM and the settings it was sent, as a run's config
    records them (``adapted``: what was changed to what its provider takes); written once, when its first memory is."""
    path = directory / "config.json"
    if path.exists():
        return
    config = {
        "program": program,
        "level": getattr(data, "level", None),
        "memory_lm": memory.spec,
        "api_base": args.api_base,
        "memory_api_base": args.memory_api_base,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "memory_temperature": args.memory_temperature,
        "memory_max_tokens": args.memory_max_tokens,
        "memory_lm_args": dict(args.memory_lm_args or {}),
        "preset": args.preset,
        "lm_config": str(args.lm_config) if args.lm_config else None,
        "runs": args.runs,
        "seed": args.seed,
        "rules": str(args.rules) if args.rules else None,
    }
    adapted = adapted_records(memory, memory)
    if adapted:
        config["adapted"] = adapted
    write_json(path, config)


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


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TableError(f"cannot read {path}: {exc}") from None


# -- rendering -------------------------------------------------------------------------------


def render_markdown(table: dict[str, Any]) -> str:
    """The table in the paper's shape, then one line per cell with its cost and directory (over several rule
    tables: first each row's mean and spread over them)."""
    heads = _heads(table["columns"])
    first = "Models" if table["table"] == "table4" else ("Memory" if table["table"] == "table2" else "Methods")
    average = table["table"] == "table4"
    header = [first, *table["mark_names"], *heads, *(["Ave."] if average else [])]
    lines = [f"**{table['title']}**", ""]
    if len({c.get("rules") for c in table["columns"]}) > 1:
        lines += [*_spread_lines(table), ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table["rows"]:
        values = {_key(c): c for c in row["cells"]}
        cells = [_format(values.get(_key(c)), table["value"]) for c in table["columns"]]
        if average:
            shown = [values[_key(c)]["value"] for c in table["columns"] if _key(c) in values]
            cells.append(_format({"value": sum(shown) / len(shown), "std": 0.0}, table["value"]) if shown else "")
        marks = ["✓" if mark else "" for mark in row["marks"]]
        lines.append("| " + " | ".join([row["label"], *marks, *cells]) + " |")
    if table["table"] == "table5":
        lines += [
            "",
            f"F1 mode: {table['f1_mode']} (see eval/hypothesis_scoring.py); a memory of structured rules (hdr_grounded) is read from its rules.",
        ]
    elif any(c.get("ci") for row in table["rows"] for c in row["cells"]):
        item, items = _items(table)
        lines += [
            "",
            f"In brackets: the 95% CI over the {items}: {METHOD} (with several runs each {item}'s accuracy is "
            "averaged over them); after ±: the std over runs.",
        ]
    if table.get("comparisons"):
        lines += ["", *_paired_lines(table, heads)]
    lines += [
        "",
        f"Command: `{table['command']}`",
        "",
        "| program | level | LM | value | tokens (prompt + completion) | wall s | cell |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in table["rows"]:
        for c in row["cells"]:
            tokens = c.get("tokens")
            spent = ""
            if tokens:
                prompt = tokens["memory"]["prompt"] + tokens["task"]["prompt"]
                completion = tokens["memory"]["completion"] + tokens["task"]["completion"]
                spent = f"{prompt:,} + {completion:,}"
            wall = f"{c['wall_seconds']:.0f}" if c.get("wall_seconds") is not None else ""
            lines.append(
                f"| {row['program']} | {c['level']} | {c['lm']} | {_format(c, table['value'])} | {spent} | {wall} | {c['cell']} |"
            )
    return "\n".join(lines) + "\n"


def _items(table: dict[str, Any]) -> tuple[str, str]:
    """What a cell's accuracy is over, singular and plural: queries on an inductive task, scenes otherwise."""
    inductive = any(isinstance(c["level"], str) for c in table["columns"])
    return ("query", "queries") if inductive else ("scene", "scenes")


def _head(level: int | str) -> str:
    """A column's head: ``Lv. 2``, or an inductive task's name."""
    return f"Lv. {level}" if isinstance(level, int) else str(level)


def _heads(columns: list[dict[str, Any]]) -> list[str]:
    """The columns' heads: the level (or task), then the LM and the rule table where the table has several."""
    several_lms = len({c["lm"] for c in columns}) > 1
    several_tables = len({c.get("rules") for c in columns}) > 1
    return [
        _head(c["level"]) + (f" {c['lm']}" if several_lms else "") + (f" {c.get('rules')}" if several_tables else "")
        for c in columns
    ]


def _spread_lines(table: dict[str, Any]) -> list[str]:
    """Each row's mean over the rule tables in each level (and LM), with the std over tables and the range."""
    groups = list(dict.fromkeys((c["level"], c["lm"]) for c in table["columns"]))
    several_lms = len({lm for _, lm in groups}) > 1
    count = len({c.get("rules") for c in table["columns"]})
    digits = 1 if table["value"] == "accuracy" else 2
    heads = [_head(level) + (f" {lm}" if several_lms else "") for level, lm in groups]
    lines = [
        f"Over the {count} rule tables: the mean of each row's cells, the std over tables, and the lowest and "
        "highest table (cells not run yet are left out, and the tables counted say so).",
        "",
        "| " + " | ".join(["Methods", *heads]) + " |",
        "|" + "---|" * (len(heads) + 1),
    ]
    for row in table["rows"]:
        cells = []
        for level, lm in groups:
            values = [c["value"] for c in row["cells"] if (c["level"], c["lm"]) == (level, lm)]
            if not values:
                cells.append("")
                continue
            mean, std = mean_std(values)
            text = f"{mean:.{digits}f} ± {std:.{digits}f} ({min(values):.{digits}f} to {max(values):.{digits}f})"
            cells.append(text + (f", {len(values)} of {count} tables" if len(values) < count else ""))
        lines.append("| " + " | ".join([row["label"], *cells]) + " |")
    for row in table["rows"]:
        for level, lm in groups:
            found = [c["rounds"] for c in row["cells"] if (c["level"], c["lm"]) == (level, lm) and c.get("rounds")]
            if not found:
                continue
            total = {key: sum(f[key] for f in found) for key in found[0]}
            lines += [
                "",
                f"{row['program']}, {_head(level)}{f' {lm}' if several_lms else ''}: {total['rules']} rules verified in "
                f"{total['memories']} memories over {len(found)} tables ({total['empty']} verified none); "
                f"{total['nothing_new']} of {total['rounds']} rounds proposed nothing new.",
            ]
    return lines


def _paired_lines(table: dict[str, Any], heads: list[str]) -> list[str]:
    """The paired tests as a table shaped like the main one: a row per pair tested, a cell per column."""
    found = {(c["a"], c["b"], *_key(c)): c for c in table["comparisons"]}
    pairs = list(dict.fromkeys((c["a"], c["b"]) for c in table["comparisons"]))
    baseline = not table.get("compare")  # every row against the first; else the pair --compare names
    title = f"A − {pairs[0][1]}" if baseline else "A − B"
    item, items = _items(table)
    lines = [
        "Paired tests" + (f", each row A against {pairs[0][1]}" if baseline else "") + f", on the same {items}: accuracy "
        f"difference in points [95% paired bootstrap CI], p-value: McNemar's exact test on right/wrong per {item}, "
        f"or (marked b) a paired bootstrap test where {items} are averaged over several runs.",
        "",
        "| " + " | ".join([title, *heads]) + " |",
        "|" + "---|" * (len(heads) + 1),
    ]
    for a, b in pairs:
        cells = []
        for column in table["columns"]:
            c = found.get((a, b, *_key(column)))
            if c is None:
                cells.append("")
                continue
            low, high = c["ci"]
            mark = "" if c["test"] == "mcnemar" else " b"
            cells.append(
                f"{100 * c['difference']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}], p = {format_p(c['p_value'])}{mark}"
            )
        lines.append("| " + " | ".join([a if baseline else f"{a} − {b}", *cells]) + " |")
    return lines


def _format(cell: dict[str, Any] | None, value: str) -> str:
    if cell is None:
        return ""
    text = f"{cell['value']:.1f}" if value == "accuracy" else f"{cell['value']:.2f}"
    if cell.get("std"):
        text += f" ± {cell['std']:.1f}" if value == "accuracy" else f" ± {cell['std']:.2f}"
    if cell.get("ci"):
        text += f" [{cell['ci'][0]:.1f}, {cell['ci'][1]:.1f}]"
    return text


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
