"""What ``python -m eval show`` prints of a stream run: the memory as it stood after the seed problems and after each
batch, its writer's and its verification's calls, what verifying each batch's writes decided, and the final memory's entries with their records; an item in full
with the memory its solver was shown."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..show_parts import read_json, short

if TYPE_CHECKING:
    from ..show import Run

__all__ = ["example", "memory_parts"]


def memory_parts(run: Run, order: int) -> list[Any]:
    """The memory of stream order ``order``: one line a snapshot, then the newest snapshot's entries."""
    paths = [run.dir / "memory" / "seed.json", *sorted((run.dir / "memory" / f"order{order}").glob("batch*.json"))]
    snapshots = [(path, read_json(path)) for path in paths if path.exists()]
    if not snapshots:
        return [Text("no memory snapshot in memory/")]
    steps = Table("memory after", "entries", "writes", "writer calls", "probe calls", "verified", box=box.SIMPLE_HEAD)
    for column in (steps.columns[0], steps.columns[-1]):
        column.no_wrap = True
    for path, saved in snapshots:
        saved = saved or {}
        writes = saved.get("writes") or []
        steps.add_row(
            _name(path),
            str(_size(saved.get("memory") or {})),
            str(len(writes)),
            _calls(writes, "tokens"),
            _calls([w["verification"] for w in writes if w.get("verification")], "tokens"),
            _decided(saved),
        )
    parts: list[Any] = [steps]
    entries = (snapshots[-1][1] or {}).get("memory", {}).get("entries")
    if entries:
        parts.append(_entries(entries))
    return parts


def _calls(records: list[dict[str, Any]], key: str) -> str:
    """The LM calls the records spent, as a cell; "" for none."""
    calls = sum(int((r.get(key) or {}).get("calls") or 0) for r in records)
    return str(calls) if calls else ""


def _name(path: Path) -> str:
    return "seed problems" if path.name == "seed.json" else f"batch {int(path.stem.removeprefix('batch'))}"


def _size(memory: dict[str, Any]) -> int:
    if "entries" in memory:
        return sum(1 for e in memory["entries"] if not (e.get("record") or {}).get("retired"))
    if memory.get("versions"):
        return len(memory["versions"][-1]["entries"])
    return len(memory.get("concepts") or [])


def _decided(saved: dict[str, Any]) -> str:
    decided = [w["verify"]["decision"] for w in saved.get("writes") or [] if w.get("verify")]
    if not decided:
        return ""
    return ", ".join(f"{decided.count(d)} {d}" for d in ("kept", "refused", "unchanged") if decided.count(d))


def _entries(entries: list[dict[str, Any]]) -> Table:
    """Each entry with what it did: probes helped and hurt when admitted, items shown and right, and why retired."""
    table = Table("id", "kind", "entry", "from", "helped/hurt", "shown/right", "retired", box=box.SIMPLE_HEAD)
    for entry in entries:
        record = entry.get("record") or {}
        table.add_row(
            str(entry.get("id") or ""),
            str(entry.get("kind") or ""),
            escape(short(entry.get("text"))),
            ", ".join(entry.get("sources") or []),
            f"{record['helped']}/{record['hurt']}" if record else "",
            f"{record['shown']}/{record['right']}" if record else "",
            str(record.get("retired") or ""),
        )
    return table


def example(run: Run, record: dict[str, Any], calls: list[dict[str, Any]]) -> tuple[list[Any], str]:
    """A stream item in full: its problem, the memory its solver was shown (and what was withheld), each try's
    feedback; its verdict."""
    parts: list[Any] = [Text(f"problem: {record.get('question')}")]
    shown = (record.get("read") or {}).get("ids")
    said = f" (entries {', '.join(shown)})" if shown else ""
    withheld = f"; {record['withheld']} withheld (written from this item)" if record.get("withheld") else ""
    parts.append(Text(f"memory shown{said}{withheld}:\n{record.get('memory') or '(empty)'}"))
    for number, feedback in enumerate(record.get("feedback") or [], 1):
        parts.append(Text(f"try {number} failed the check: {feedback}"))
    return parts, f"prediction {record.get('prediction')}, target {record.get('target')}"
