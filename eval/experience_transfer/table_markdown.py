"""A table's record (``<out>/<table>.json``) printed in the paper's shape (``<out>/<table>.md``): the table, the
spread over rule tables, the paired tests, then one line per cell with its cost and directory."""

from __future__ import annotations

from typing import Any

from ..metrics import mean_std
from ..paired import format_p
from ..stats import METHOD
from .table_specs import TABLES

__all__ = ["column_head", "column_heads", "column_key", "render_markdown"]


def render_markdown(table: dict[str, Any]) -> str:
    """The table in the paper's shape, then one line per cell with its cost and directory (over several rule
    tables: first each row's mean and spread over them)."""
    spec = TABLES[table["table"]]
    heads = column_heads(table["columns"])
    header = [spec.heading, *table["mark_names"], *heads, *(["Ave."] if spec.averaged else [])]
    lines = [f"**{table['title']}**", ""]
    if len({c.get("rules") for c in table["columns"]}) > 1:
        lines += [*_spread_lines(table), ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table["rows"]:
        values = {column_key(c): c for c in row["cells"]}
        cells = [_format(values.get(column_key(c)), table["value"]) for c in table["columns"]]
        if spec.averaged:
            shown = [values[column_key(c)]["value"] for c in table["columns"] if column_key(c) in values]
            cells.append(_format({"value": sum(shown) / len(shown), "std": 0.0}, table["value"]) if shown else "")
        marks = ["✓" if mark else "" for mark in row["marks"]]
        lines.append("| " + " | ".join([row["label"], *marks, *cells]) + " |")
    if spec.scores_memories:
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
    lines += _masked_lines(table, heads)
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


def _masked_lines(table: dict[str, Any], heads: list[str]) -> list[str]:
    """Level 3: each cell's accuracy on the objects of masked combinations (no episode shows them) apart from the rest,
    per object where the reader labels each, per scene for every row, and, where a memory records them, the objects
    of undecidable combinations."""
    cells = [(row, c) for row in table["rows"] for c in row["cells"] if c.get("masked")]
    if not cells:
        return []
    head = {column_key(c): h for c, h in zip(table["columns"], heads)}
    open_ = any(c["masked"].get("undecidable_objects") is not None for _, c in cells)  # some memory records them
    lines = [
        "",
        "Objects of the masked combinations (hidden from the episodes, drawn in the test scenes) apart from the rest: "
        "accuracy % [95% CI] (n). Objects are scored where the reader labels each object; scenes for every row."
        + (
            " Undecidable: test objects of a combination the memory records as left open by the episodes (per run), "
            "and the accuracy on them."
            if open_
            else ""
        ),
        "",
        "| row | column | masked objects | other objects | scenes with a masked object | other scenes |"
        + (" undecidable objects |" if open_ else ""),
        "|---|---|---|---|---|---|" + ("---|" if open_ else ""),
    ]
    for row, c in cells:
        m = c["masked"]
        objects, scenes = m.get("objects") or {}, m.get("scenes") or {}
        cells_text = [
            _share(objects.get("masked")),
            _share(objects.get("visible")),
            _share(scenes.get("with_masked")),
            _share(scenes.get("without_masked")),
        ]
        if open_:
            undecided = m.get("undecidable_objects")
            text = "" if undecided is None else ", ".join(map(str, undecided))
            if m.get("undecidable"):
                text += f": {_share(m['undecidable'])}"
            cells_text.append(text)
        lines.append("| " + " | ".join([row["label"], head.get(column_key(c), str(c["level"])), *cells_text]) + " |")
    return lines


def _share(cell: dict[str, Any] | None) -> str:
    if not cell:
        return ""
    ci = f" [{cell['ci'][0]:.1f}, {cell['ci'][1]:.1f}]" if cell.get("ci") else ""
    return f"{cell['value']:.1f}{ci} ({cell['n']})"


def _items(table: dict[str, Any]) -> tuple[str, str]:
    """What a cell's accuracy is over, singular and plural: queries on an inductive task, scenes otherwise."""
    inductive = any(isinstance(c["level"], str) for c in table["columns"])
    return ("query", "queries") if inductive else ("scene", "scenes")


def column_key(column: dict[str, Any]) -> tuple[Any, str, str | None]:
    """A column's (or a cell's) place: level, LM and rule table (tables written before the last had none)."""
    return column["level"], column["lm"], column.get("rules")


def column_head(level: int | str) -> str:
    """A column's head: ``Lv. 2``, or an inductive task's name."""
    return f"Lv. {level}" if isinstance(level, int) else str(level)


def column_heads(columns: list[dict[str, Any]]) -> list[str]:
    """The columns' heads: the level (or task), then the LM and the rule table where the table has several."""
    several_lms = len({c["lm"] for c in columns}) > 1
    several_tables = len({c.get("rules") for c in columns}) > 1
    return [
        column_head(c["level"]) + (f" {c['lm']}" if several_lms else "") + (f" {c.get('rules')}" if several_tables else "")
        for c in columns
    ]


def _spread_lines(table: dict[str, Any]) -> list[str]:
    """Each row's mean over the rule tables in each level (and LM), with the std over tables and the range."""
    groups = list(dict.fromkeys((c["level"], c["lm"]) for c in table["columns"]))
    several_lms = len({lm for _, lm in groups}) > 1
    count = len({c.get("rules") for c in table["columns"]})
    digits = 1 if table["value"] == "accuracy" else 2
    heads = [column_head(level) + (f" {lm}" if several_lms else "") for level, lm in groups]
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
                f"{row['program']}, {column_head(level)}{f' {lm}' if several_lms else ''}: {total['rules']} rules verified in "
                f"{total['memories']} memories over {len(found)} tables ({total['empty']} verified none); "
                f"{total['nothing_new']} of {total['rounds']} rounds proposed nothing new.",
            ]
    return lines


def _paired_lines(table: dict[str, Any], heads: list[str]) -> list[str]:
    """The paired tests as a table shaped like the main one: a row per pair tested, a cell per column."""
    found = {(c["a"], c["b"], *column_key(c)): c for c in table["comparisons"]}
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
            c = found.get((a, b, *column_key(column)))
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
