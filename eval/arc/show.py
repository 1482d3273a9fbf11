"""What ``python -m eval show`` prints of an ARC run (:class:`memreason.eval.arc.task.Arc` gives it): the split and
scores in the header, the memory's snapshots, a line per task (official score, train pairs passed, attempts,
memory read), and a task in full: the concepts selected, each attempt's programs step by step, how each ran on
the train pairs, and the feedback its retry was given."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..show_parts import FIELD_CHARS, input_field, mark, plural, read_json, short
from .attribution import official
from .checkpoints import read_writes
from .memory_measures import read_measure

if TYPE_CHECKING:
    from ..show import Run

__all__ = ["example", "header_lines", "measures_line", "memory_parts", "overview", "programs_line", "setting"]


def setting(config: dict[str, Any]) -> str:
    """The header's line on what the run ran."""
    return f"split {config.get('split')}, retries {config.get('retries')}, attempts {config.get('attempts')}"


def header_lines(results: dict[str, Any]) -> list[str]:
    """The header's lines on a finished run: its official score, how its programs fared, what its memory reads did."""
    lines = [f"official score {100 * (results.get('official_score') or 0):.1f}%"]
    programs = results.get("programs") or {}
    if "ran" in programs:
        lines.append(programs_line(programs))
    measures = results.get("memory_measures") or {}
    if measures.get("tasks"):
        lines.append(measures_line(measures))
    return lines


def programs_line(p: dict[str, Any]) -> str:
    """How the run's programs fared on the train inputs (results.json's ``programs``)."""
    raised = p.get("raised") or {}
    names = ", ".join(f"{escape(str(name))} {n}" for name, n in (p.get("undefined_names") or [])[:3])
    undefined = f", {raised['NameError']} NameError ({names})" if raised.get("NameError") and names else ""
    return (
        f"programs: {p['written']} written; {p['did_not_parse']} did not parse, {p['no_transform']} had no transform, "
        f"{sum(raised.values())} raised{undefined}, {p['timed_out'] + p['bad_output']} timed out or gave no grid, "
        f"{p['ran']} ran on every train input ({p['some_right']} with some pair right, {p['all_right']} with all)"
    )


def measures_line(m: dict[str, Any]) -> str:
    """What the memory reads did over the run (results.json's ``memory_measures``)."""
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731
    line = (
        f"memory reads: hit@k {pct(m.get('hit_at_k'))}, precision {pct(m.get('precision'))} over {m['tasks']} reads "
        f"(k = {m.get('selected_mean') or 0:.1f} concepts on average)"
    )
    blind = [
        (what, m.get(key))
        for what, key in (("by chance", "chance_hit_at_k"), ("naming the most-sourced", "most_sourced_hit_at_k"))
    ]
    if any(v is not None for _, v in blind):
        line += "; hit@k blind to the puzzle: " + ", ".join(f"{pct(v)} {what}" for what, v in blind)
    unheld = m["tasks"] - m.get("label_held", m["tasks"])
    if unheld:
        line += f"; {unheld} of them from a memory holding no concept of the task's own (left out of hit@k and precision)"
    if m.get("part_tasks"):
        line += f"; part hit {pct(m.get('part_hit'))}, part coverage {pct(m.get('part_coverage'))}"
    top = (m.get("reuse") or [])[:3]
    if top:
        line += "; most selected: " + ", ".join(
            f"{escape(str(e['concept']))} ({e['selected']}, {e['solved']} solved)" for e in top
        )
    return line


def memory_parts(run: Run, r: int) -> list[Any]:
    """The memory of repetition ``r``: its snapshots in one line."""
    return [Text(memory_line(run.dir / "memory" / f"run{r}"))]


def memory_line(directory: Path) -> str:
    """An ARC run's memory in one line: its size as loaded and at the end, and where the snapshots are."""
    snapshots = sorted(directory.glob("*.json")) if directory.is_dir() else []
    if not snapshots:
        return "no memory: this program reads none"

    def size(name: str) -> str:
        path = directory / name
        if not path.exists():
            return "-"
        data = read_json(path) or {}
        if data.get("format") == "cheatsheet":
            return f"a sheet of {len(data.get('text') or '')} characters"
        return plural(len(data.get("concepts") or []), "concept")

    wrote = len(read_writes(directory / "writes.jsonl"))
    return (
        f"memory: {size('step-0000.json')} as loaded, {size('final.json')} at the end; {plural(wrote, 'write')}; "
        f"{len(snapshots)} snapshots in {directory.parent.name}/{directory.name}/; each task's selected concepts: --id"
    )


def overview(run: Run, records: list[dict[str, Any]]) -> Table:
    """One line per task record: official score, train pairs passed, attempts, tokens, the memory read."""
    measured = {id(r): m for r in records if (m := read_measure(r)) is not None}
    columns = ["run", "task", "official", "passed train", "attempts", "tokens"]
    table = Table(*columns, *(["memory (k, hit)"] if measured else []), box=box.SIMPLE_HEAD)
    for r in records:
        tokens = sum((t or {}).get("total", 0) for t in (r.get("tokens") or {}).values())
        cells = [
            str(r["run"]),
            str(r["id"]),
            mark(run.correct(r), f"{official(r):.2f}"),
            "yes" if r.get("passed_train") else "no",
            str(len(r.get("attempts") or [])),
            f"{tokens:,}",
        ]
        if measured:
            m = measured.get(id(r))
            cells.append("" if m is None else f"{m.k}, {('hit' if m.hit else 'miss') if m.held else 'no source'}")
        table.add_row(*cells)
    return table


def example(run: Run, record: dict[str, Any], calls: list[dict[str, Any]]) -> tuple[list[Any], str]:
    """A task record in full, and its verdict."""
    return example_parts(record, calls), f"official score {official(record):.2f}"


def example_parts(record: dict[str, Any], calls: list[dict[str, Any]]) -> list[Any]:
    parts: list[Any] = []
    read = record.get("read") or {}
    if "selected" in read:
        selected = read.get("selected")
        sources = read.get("selected_sources") if isinstance(read.get("selected_sources"), dict) else {}
        shown = (
            ", ".join(str(n) + (f" (from {', '.join(map(str, sources[n]))})" if sources.get(n) else "") for n in selected)
            if isinstance(selected, list)
            else str(selected)
        )
        parts.append(
            Text(f"concepts selected: {shown or 'none'}" + (f" (read failed: {read['failed']})" if read.get("failed") else ""))
        )
        m = read_measure(record)
        if m is not None and m.k and not m.held:
            parts.append(
                Text(
                    f"memory read: k = {m.k}; no concept in memory comes from a task of this task's concept, "
                    "so hit and precision are not measured",
                    style="dim",
                )
            )
        elif m is not None and m.k:
            parts.append(
                Text(
                    f"memory read: {'a hit' if m.hit else 'a miss'} at k = {m.k} (precision {m.precision:.2f}: selected "
                    f"concepts abstracted from tasks of this task's concept)"
                    + (
                        f"; blind to the puzzle: a hit with chance {m.chance:.2f}, "
                        f"{'a hit' if m.most_sourced else 'a miss'} naming the {m.k} most-sourced"
                        if m.chance is not None and m.most_sourced is not None
                        else ""
                    ),
                    style="dim",
                )
            )
    given = next(
        (
            v
            for c in calls
            if str(c.get("step", "")).startswith("arc_solver")
            for v in [input_field(c, "concepts")]
            if v is not None
        ),
        None,
    )
    if given is not None:  # the memory exactly as the solver's prompt carried it
        parts.append(Text.assemble(("memory in the solver's prompt: ", "bold"), short(given.strip() or "(empty)")))
    for attempt in record.get("attempts") or []:
        steps = attempt.get("steps") or []
        for n, step in enumerate(steps, 1):
            train = step.get("train") or []
            passed = sum(bool(c.get("correct")) for c in train)
            head = (
                f"attempt {attempt.get('index')}, {'retry ' + str(step.get('retry')) if step.get('retry') else 'first program'}: "
                f"{passed}/{len(train)} train pairs right"
            )
            body: list[Any] = [Text(head, style="bold")]
            body.extend(step_read(step.get("read") or {}))
            if step.get("error"):
                body.append(Text(f"no program: {step['error']}", style="red"))
            if step.get("program"):
                body.append(Text(step["program"].rstrip()))
            for i, check in enumerate(train):
                if not check.get("correct"):
                    body.append(
                        Text(
                            f"train pair {i}: "
                            + (f"{check.get('failure')}: {check.get('detail', '')}" if check.get("failure") else "wrong output"),
                            style="yellow",
                        )
                    )
            if step.get("feedback") and n < len(steps):  # the last step's feedback went to no one
                body.append(Text("feedback given to the next retry: " + step["feedback"][:FIELD_CHARS], style="dim"))
            parts.append(Panel(Group(*body), box=box.SIMPLE))
    return parts


def step_read(read: dict[str, Any]) -> list[Any]:
    """What a retry step read from memory for itself (a retry pass's re-read, or a re-selection), if anything."""
    if "selected" not in read and not read.get("failed"):
        return []
    names = read.get("selected")
    shown = (", ".join(map(str, names)) if isinstance(names, list) else str(names or "")) or "none"
    how = "re-selected for this retry (added to the first read's)" if read.get("reselected") else "read again for this retry"
    failed = f" (failed: {read['failed']})" if read.get("failed") else ""
    return [Text(f"concepts {how}: {shown}{failed}", style="cyan")]
