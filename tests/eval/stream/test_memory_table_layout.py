"""``memory_table``'s files read on a page: ``table.md`` puts its shorter side across (a results page's column is
about 880 px wide), and ``gains.png`` keeps its labels legible at that width."""

from __future__ import annotations

from typing import Any

import matplotlib.text

import memreason.eval.stream.table as table_module
from memreason.eval.stream.table import markdown


def _table(programs: list[str], tasks: list[str]) -> dict[str, Any]:
    """A table as :func:`memory_table` returns it: the first program each task's baseline, every other cell +5."""
    cells = []
    for row in programs:
        for column in tasks:
            base = row == programs[0]
            cell = {"row": row, "column": column, "score": 0.3 if base else 0.35, "gain": None if base else 5.0}
            cell |= {"p_value": None if base else 0.5, "memory_tokens": 0, "verify_tokens": 0}
            cells.append(cell | {"points_per_1k": None, "equal_prompts": None, "equal_differed": None})
    return {"columns": tasks, "rows": programs, "baselines": dict.fromkeys(tasks, programs[0]), "cells": cells}


def _header(text: str) -> list[str]:
    return [cell.strip() for cell in text.splitlines()[0].strip("|").split("|")]


def test_tasks_are_rows_where_there_are_no_more_programs_than_tasks():
    programs, tasks = ["stream_baseline", "fewshot"], ["rg:acre", "rg:puzzle24", "rg:number_sequence"]
    text = markdown(_table(programs, tasks))
    assert _header(text) == ["task", *programs]
    rows = {line.split("|")[1].strip(): line for line in text.splitlines()[2:5]}
    assert list(rows) == tasks
    assert all("30.0 (baseline) | 35.0 (+5.0, p=0.5) |" in line for line in rows.values())
    assert _header(markdown(_table(programs, tasks[:2])))[0] == "task"  # as many: tasks are rows


def test_programs_are_rows_where_there_are_more_programs_than_tasks():
    programs, tasks = ["stream_baseline", "fewshot", "cheatsheet_cu"], ["rg:acre", "rg:puzzle24"]
    text = markdown(_table(programs, tasks))
    assert _header(text) == ["program", *tasks]
    assert [line.split("|")[1].strip() for line in text.splitlines()[2:5]] == programs


def test_the_heatmap_is_legible_at_a_pages_width(tmp_path, monkeypatch):
    """Seven tasks and seven programs, as on the memory-by-task page: the image is at most 1,200 px wide (shown in a
    page's column, about 880 px, it is scaled by no less than 0.73) and no text in it is under 10 points (17 px at
    the figure's 120 dpi, so about 12 px at that scale; 8-point text on a 1,476 px image showed at under 8 px)."""
    drawn: dict[str, Any] = {}
    monkeypatch.setattr(table_module, "save_figure", lambda figure, path, **options: drawn.update(figure=figure, **options))
    programs = ["stream_baseline", "fewshot", "cheatsheet_cu, answers only", "arcmemo_ps_stream, answers only"]
    programs += ["failure_memory, answers only", "cheatsheet_cu", "failure_memory"]
    tasks = ["et:L2", "rg:acre", "rg:puzzle24", "rg:arc_1d", "rg:calendar_arithmetic", "rg:list_functions"]
    table_module._heatmap(_table(programs, [*tasks, "rg:number_sequence"]), tmp_path / "gains.png")
    figure = drawn["figure"]
    assert figure.get_size_inches()[0] * drawn["dpi"] <= 1200
    texts = [text for text in figure.findobj(matplotlib.text.Text) if text.get_text() and text.get_visible()]
    assert len(texts) > 7 * 7 and min(text.get_fontsize() for text in texts) >= 10
