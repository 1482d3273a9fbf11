"""What ``python -m eval show`` prints of a run by default (:class:`memreason.eval.tasks.Task`'s own view, which
problem tasks such as ACRE, List Functions and any of your own keep): each problem's memory, a line per query,
and a query in full (its problem, what answered it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..show_parts import mark, read_json, short

if TYPE_CHECKING:
    from ..show import Run

__all__ = ["example", "header_lines", "memory_parts", "overview", "setting"]


def setting(config: dict[str, Any]) -> str:
    """The header's line on what the run ran."""
    return f"task {config.get('task')}, seed {config.get('seed', 0)}, limit {config.get('limit')}"


def header_lines(results: dict[str, Any]) -> list[str]:
    """The header's line on a finished run: its accuracy, and its hypotheses' F1 where it was scored."""
    acc = results.get("accuracy") or {}
    f1 = results.get("hypothesis_f1") or {}
    return [
        f"accuracy {100 * acc.get('mean', 0):.1f}% on {results.get('examples')} examples"
        + (f", hypothesis F1 {f1['mean']:.2f} ({f1.get('mode')})" if f1.get("mean") is not None else "")
    ]


def memory_parts(run: Run, r: int) -> list[Any]:
    """The memories of repetition ``r``: one per problem, built from that problem's episodes alone."""
    records = {p.stem: read_json(p) for p in sorted((run.dir / "memory" / f"run{r}").glob("*.json"))}
    parts: list[Any] = [Text(f"each problem builds its own memory (memory/run{r}/<problem>.json): {len(records)} built")]
    table = Table("problem", "hypotheses", "kept", box=box.SIMPLE_HEAD)
    for problem, record in records.items():
        record = record or {}
        kept = "yes" if record.get("kept") is not None else ("no" if "kept" in record else "")
        table.add_row(problem, escape(short(" | ".join(record.get("hypotheses") or []))), kept)
    if records:
        parts.append(table)
    return parts


def overview(run: Run, records: list[dict[str, Any]]) -> Table:
    """One line per item: target, prediction, what answered it, error."""
    table = Table("run", run.task.item, "target", "prediction", "answered by", "error", box=box.SIMPLE_HEAD)
    for r in records:
        table.add_row(
            str(r["run"]),
            str(r["id"]),
            escape(str(r.get("target"))),
            mark(run.correct(r), escape(str(r.get("prediction")))),
            str(r.get("source") or "reasoner"),
            escape(str(r.get("error") or "")),
        )
    return table


def example(run: Run, record: dict[str, Any], calls: list[dict[str, Any]]) -> tuple[list[Any], str]:
    """An item in full (its problem and query, what answered it), and its verdict."""
    parts: list[Any] = [Text(f"problem {record.get('problem')}, {run.task.item}: {record.get('query')}")]
    if record.get("note"):
        parts.append(Text(f"answered by {record.get('source')}: {record['note']}"))
    return parts, f"prediction {record.get('prediction')}, target {record.get('target')}"
