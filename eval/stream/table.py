"""The memory-by-task table: runs of memory programs on several tasks, each cell against its task's no-memory run.

    table = memory_table([Path("runs/table/puzzle24/stream_baseline"), Path("runs/table/puzzle24/fewshot"), ...])
    write_table(table, Path("runs/table/summary"))   # table.json, table.md, gains.png (a heatmap of the gains)

Any run directory of any task: its task (:func:`memreason.eval.tasks.task_of`) says what an item is
(``item_key``) and what it scored (``item_score``), so Experience-Transfer, ARC, the inductive tasks and
stream tasks sit in one table. A column is a task (with its level or split); a row a program (", answers
only" where its writes read attempts and the run gave them the answers alone: ``lesson``). In each
column the run named by ``baselines`` (a task's column label -> a row, or a program's own row), else the first run,
is the row every other is compared with: the gain in points and a paired test on the items both hold
(McNemar's exact test, or a paired bootstrap when scores are not right/wrong). A row with no run in a column
says why where the column's task cannot run that program (``why_not``: its reason), else that it was not run.
``table.md`` lays it out with its shorter side across (tasks as rows where there are no more programs than tasks).

A run directory the table cannot read (no ``results.json``, one that is not a run's, a damaged ``examples.jsonl``)
and a ``baselines`` column no run is in are :class:`TableError` (one line at the command line). The files are
written whole (:mod:`memreason.files`): a full disk leaves the old ones, never half of one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from memreason.files import MAX_BYTES, read_json_file, write_text

from ..harness.figures import save_figure
from ..harness.resume import RunDirError, read_examples
from ..harness.runs import write_json
from ..stats import paired

__all__ = ["Cell", "TableError", "markdown", "memory_table", "write_table"]


class TableError(ValueError):
    """A run directory the table cannot read (one line at the command line)."""


@dataclass
class Cell:
    """One run in the table: its program, its column, its headline score and its items' scores."""

    program: str
    column: str
    score: float | None
    run_dir: str
    items: dict[str, list[float]] = field(repr=False)
    task: str = ""
    row: str = ""  # its row: the program, marked where its writes read answers alone
    gain: float | None = None  # points above the column's baseline
    p_value: float | None = None
    test: str | None = None
    paired_items: int = 0
    prompts: dict[str, tuple[str, str | None]] = field(default_factory=dict, repr=False)  # item -> (memory shown, answer)
    memory_tokens: int = 0  # what its writes spent (prompt + completion)
    verify_tokens: int = 0  # what verifying its writes spent
    equal_prompts: int | None = None  # items whose solver saw the memory the baseline's saw (equal prompts)
    equal_differed: int | None = None  # ... and were answered differently all the same

    def as_dict(self) -> dict[str, Any]:
        keys = ("program", "row", "column", "task", "score", "run_dir", "gain", "p_value", "test", "paired_items")
        keys += ("memory_tokens", "verify_tokens", "equal_prompts", "equal_differed")
        return {**{k: getattr(self, k) for k in keys}, "points_per_1k": self.points_per_1k()}

    def points_per_1k(self) -> float | None:
        """Points gained over the baseline per 1,000 tokens spent on memory (writes and their verification)."""
        spent = self.memory_tokens + self.verify_tokens
        return None if self.gain is None or not spent else 1000 * self.gain / spent


def _column(results: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    task = str(results.get("task") or config.get("task") or "?")
    level = results.get("level") or config.get("level")
    split = config.get("split")  # an ARC run's split
    return task + (f" L{level}" if level else "") + (f" {split}" if split else "")


def read_cell(run_dir: Path) -> Cell:
    """A run directory as a :class:`Cell` (its baseline comparison not made yet)."""
    from ..tasks.registry import task_of

    if not (run_dir / "results.json").exists():
        raise TableError(f"{run_dir} is not a finished run: it has no results.json")
    results = _record(run_dir / "results.json", "results")
    config = _record(run_dir / "config.json", "config")
    task = task_of(results) or task_of(config)
    if task is None:
        raise TableError(f"{run_dir}: no registered task reads this run (task {results.get('task')!r})")
    items: dict[str, list[float]] = {}
    prompts: dict[str, tuple[str, str | None]] = {}
    examples = run_dir / "examples.jsonl"
    if examples.exists() and not examples.is_file():
        raise TableError(f"{examples} is not a regular file (a folder, device or pipe); the run is damaged")
    try:
        for record in read_examples(examples, repair=False).values():
            key = task.item_key(record, config)
            items.setdefault(key, []).append(task.item_score(record))
            if "memory" in record and record.get("order", 0) == 0:  # a stream item: the memory its solver was shown
                prompts[key] = (str(record.get("memory") or ""), record.get("prediction"))
    except RunDirError as exc:
        raise TableError(str(exc)) from None
    except OSError as exc:
        raise TableError(f"cannot read {examples}: {exc.strerror or exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise TableError(f"{examples} holds a record that is not its task's ({type(exc).__name__}: {exc})") from None
    program, column = str(results.get("program", "?")), _column(results, config)
    cell = Cell(program, column, task.headline_value(results), str(run_dir), items, task=task.name, row=_row(program, config))
    cell.prompts = prompts
    cell.memory_tokens = int(((results.get("tokens") or {}).get("memory") or {}).get("total") or 0)
    cell.verify_tokens = int((((results.get("verification") or {}).get("tokens")) or {}).get("total") or 0)
    return cell


def _record(path: Path, what: str) -> dict[str, Any]:
    """A run's ``results.json`` or ``config.json``: a JSON object read through the one bounded reader, or
    :class:`TableError` in one line."""
    data = read_json_file(path, TableError, f"{what} file", max_bytes=MAX_BYTES)
    if not isinstance(data, dict):
        raise TableError(f"{what} file {path} is not a run's {what} (a JSON object), got {type(data).__name__}")
    return data


def _row(program: str, config: Mapping[str, Any]) -> str:
    """A run's row: its program, marked ", answers only" where its writes read attempts and this run gave them
    the answers alone (``lesson``; configs saved before it existed: answers alone)."""
    from memreason.programs import PROGRAMS

    from .evaluate import DEFAULTS

    spec = PROGRAMS.get(program)
    row = program
    if spec is not None and spec.reads_attempts and config.get("lesson", DEFAULTS["lesson"]) == "answer":
        row = f"{program}, answers only"
    if config.get("verify"):
        row += f", verified ({config['verify']} probes)"
    if config.get("memory_tokens"):
        row += f", {config['memory_tokens']} tokens"
    return row


def memory_table(run_dirs: Sequence[Path], *, baselines: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The table of ``run_dirs`` (see the module's docstring) as JSON-ready data."""
    given: dict[Path, Path] = {}
    for d in run_dirs:
        given.setdefault(Path(d).resolve(), Path(d))  # a directory given twice (overlapping globs) counts once
    cells = [read_cell(d) for d in given.values()]
    seen: dict[tuple[str, str], str] = {}
    for cell in cells:
        other = seen.setdefault((cell.row, cell.column), cell.run_dir)
        if other != cell.run_dir:
            raise TableError(f"two runs of {cell.row} in column {cell.column}: {other} and {cell.run_dir}; give one")
    columns = list(dict.fromkeys(c.column for c in cells))
    rows = list(dict.fromkeys(c.row for c in cells))
    for named in baselines or {}:
        if named not in columns and named not in {column.split()[0] for column in columns}:
            raise TableError(f"--baseline {named}: no such column; the columns are {', '.join(columns)}")
    chosen: dict[str, str] = {}
    for column in columns:
        here = [c for c in cells if c.column == column]
        wanted = (baselines or {}).get(column) or (baselines or {}).get(column.split()[0])
        # a row by its name, else a program's one row ("cheatsheet_cu" is that row where "..., answers only" is also here)
        named = [c for c in here if c.row == wanted] or [c for c in here if c.program == wanted]
        base = (named[0] if named else None) if wanted else here[0]
        if base is None:
            raise TableError(f"no run of {wanted} in column {column}")
        chosen[column] = base.row
        for cell in here:
            if cell is base or base.score is None or cell.score is None:
                continue
            try:
                test = paired(cell.items, base.items)
            except ValueError:
                raise TableError(f"{cell.run_dir} and {base.run_dir} hold no item in common") from None
            cell.gain, cell.p_value, cell.test, cell.paired_items = 100 * test.difference, test.p_value, test.test, test.items
            _equal_prompts(cell, base)
    return {
        "columns": columns,
        "rows": rows,
        "baselines": chosen,
        "cells": [c.as_dict() for c in cells],
        "cannot_run": _cannot_run(cells, columns, rows),
    }


def _equal_prompts(cell: Cell, base: Cell) -> None:
    """Count the items whose solver saw the same memory as the baseline's (so the same prompt: one solver, one item)
    and, of those, the ones answered differently: the server's own noise, since nothing else differed."""
    shared = [key for key in cell.prompts if key in base.prompts and cell.prompts[key][0] == base.prompts[key][0]]
    if cell.prompts and base.prompts:
        cell.equal_prompts = len(shared)
        cell.equal_differed = sum(1 for key in shared if cell.prompts[key][1] != base.prompts[key][1])


def _cannot_run(cells: Sequence[Cell], columns: Sequence[str], rows: Sequence[str]) -> dict[str, dict[str, str]]:
    """For each column, the rows with no run there whose program the column's task cannot run, with why."""
    from ..tasks.registry import get_task

    held = {(c.row, c.column) for c in cells}
    program = {c.row: c.program for c in cells}
    found: dict[str, dict[str, str]] = {}
    for column in columns:
        task = get_task(next(c.task for c in cells if c.column == column))
        for row in rows:
            why = None if (row, column) in held else task.why_not(program[row])
            if why:
                found.setdefault(column, {})[row] = why
    return found


def _markdown(table: Mapping[str, Any]) -> str:
    """The table as Markdown, its shorter side across, so that it is no wider than it need be on a page: with no
    more programs than tasks a task is a row and a program a column, else a program is a row and a task a column."""
    programs, tasks = table["rows"], table["columns"]
    tasks_down = len(programs) <= len(tasks)
    down, across = (tasks, programs) if tasks_down else (programs, tasks)
    reasons: list[str] = []
    lines = [
        f"| {'task' if tasks_down else 'program'} | " + " | ".join(across) + " |",
        "| --- |" + " --- |" * len(across),
    ]
    for one in down:
        shown = [_shown(table, *((other, one) if tasks_down else (one, other)), reasons) for other in across]
        lines.append(f"| {one} | " + " | ".join(shown) + " |")
    note = (
        "\nScore in % (gain over its task's baseline in points, paired p: McNemar's exact test on the items both "
        "runs hold, or a paired bootstrap where scores are not right or wrong). not run: no run given for the cell.\n"
    )
    why = "".join(f"\n[{i}] {reason}\n" for i, reason in enumerate(reasons, 1))
    return "\n".join(lines) + "\n" + note + why + _cost_markdown(table)


def _shown(table: Mapping[str, Any], row: str, column: str, reasons: list[str]) -> str:
    """What the cell of program ``row`` on task ``column`` shows; a reason it cannot run is numbered in ``reasons``."""
    cell = next((c for c in table["cells"] if (c["row"], c["column"]) == (row, column)), None)
    why = table.get("cannot_run", {}).get(column, {}).get(row)
    if cell is None and why:
        if why not in reasons:
            reasons.append(why)
        return f"cannot run [{reasons.index(why) + 1}]"
    if cell is None:
        return "not run"
    if cell["score"] is None:
        return "?"
    if table["baselines"][column] == row:
        return f"{100 * cell['score']:.1f} (baseline)"
    return f"{100 * cell['score']:.1f} ({cell['gain']:+.1f}, p={cell['p_value']:.3g})"


def _cost_markdown(table: Mapping[str, Any]) -> str:
    """Each compared cell's spend on memory and the prompts it shared with its baseline."""
    rows = []
    for cell in table["cells"]:
        if cell["gain"] is None:
            continue
        per = "-" if cell["points_per_1k"] is None else f"{cell['points_per_1k']:+.3f}"
        equal = "-" if cell["equal_prompts"] is None else f"{cell['equal_prompts']} / {cell['equal_differed']}"
        rows.append(
            f"| {cell['row']} | {cell['column']} | {cell['memory_tokens']:,} | {cell['verify_tokens']:,} | {per} | {equal} |"
        )
    if not rows:
        return ""
    head = (
        "\n| program | task | writes' tokens | verification's tokens | points per 1,000 memory tokens | "
        "prompts equal to the baseline's / of those answered differently |\n| --- | --- | --- | --- | --- | --- |\n"
    )
    note = (
        "\nMemory tokens: prompt and completion tokens of the writes and of their verification. Equal prompts: items "
        "whose solver was shown the memory the baseline's was (the same prompt); answers that differ there are the "
        "server's own noise.\n"
    )
    return head + "\n".join(rows) + "\n" + note


def _heatmap(table: Mapping[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    by = {(c["row"], c["column"]): c for c in table["cells"]}
    rows, columns = table["rows"], table["columns"]
    gains = np.full((len(rows), len(columns)), np.nan)
    for i, row in enumerate(rows):
        for j, column in enumerate(columns):
            cell = by.get((row, column))
            if cell is not None and cell["gain"] is not None:
                gains[i, j] = cell["gain"]
    bound = max(1.0, float(np.nanmax(np.abs(gains)))) if np.isfinite(gains).any() else 1.0
    # sized to be read at a page's width (about 880 px; with 7 columns that is 0.77 of the image's 1,140): its
    # 11-point labels show at about 14 px there, where 8-point ones on 1.3-inch columns showed at under 8
    figure, axes = plt.subplots(figsize=(3.2 + 0.9 * len(columns), 1.4 + 0.45 * len(rows)))
    image = axes.imshow(gains, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto")
    for i, row in enumerate(rows):
        for j, column in enumerate(columns):
            cell = by.get((row, column))
            if cell is None:
                text = "n/a" if row in table.get("cannot_run", {}).get(column, {}) else "not run"
            elif table["baselines"][column] == row:
                text = "base"
            elif cell["gain"] is None:
                text = "?"
            else:
                star = "*" if (cell["p_value"] or 1) < 0.05 else ""
                text = f"{cell['gain']:+.0f}{star}"
            dark = cell is not None and cell["gain"] is not None and abs(cell["gain"]) > 0.6 * bound
            axes.text(j, i, text, ha="center", va="center", fontsize=11, color="white" if dark else "black")
    axes.set_xticks(range(len(columns)), columns, rotation=30, ha="right", fontsize=11)
    axes.set_yticks(range(len(rows)), rows, fontsize=11)
    bar = figure.colorbar(image)
    bar.set_label("gain over no memory (points)", fontsize=11)
    bar.ax.tick_params(labelsize=10)
    axes.set_title("memory by task (* p < 0.05, paired)", fontsize=12)
    figure.tight_layout()
    save_figure(figure, path, dpi=120)
    plt.close(figure)


def markdown(table: Mapping[str, Any]) -> str:
    """The table as Markdown (what ``table.md`` holds)."""
    return _markdown(table)


def write_table(table: Mapping[str, Any], out: Path) -> list[Path]:
    """``table.json``, ``table.md`` and ``gains.png`` (the gains as a heatmap) in ``out``, each written whole; their
    paths (:class:`memreason.files.DiskFull` naming the file on a full disk)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "table.json", out / "table.md", out / "gains.png"]
    write_json(paths[0], json.loads(json.dumps(table)))
    write_text(paths[1], _markdown(table))
    _heatmap(table, paths[2])
    return paths
