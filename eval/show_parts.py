"""Pieces of ``python -m eval show`` shared by the generic view (:mod:`memreason.eval.show`) and the tasks' own
views: a program's memory record, numbers and marks, and the fields of a traced LM call.

    memory_record(json.loads(path.read_text()), semantic=True)   # hypotheses, rules checked, rounds, cost
    mark(True, "3")                                              # "3 ✓" in green
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

__all__ = ["FIELD_CHARS", "input_field", "mark", "memory_record", "message_text", "plural", "read_json", "rounds", "short"]

FIELD_CHARS = 2_000  # characters of one parsed field shown (the trace file has all of it)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def mark(ok: bool, text: str) -> Text:
    return Text(f"{text} {'✓' if ok else '✗'}", style="green" if ok else "red")


def short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= FIELD_CHARS else text[:FIELD_CHARS] + f" ... ({len(text) - FIELD_CHARS:,} more characters)"


def message_text(content: Any) -> str:
    if isinstance(content, list):  # multi-part content: text parts and image notes
        return "\n".join(
            str(part.get("text") or part.get("image_url") or part) if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def input_field(call: dict[str, Any], name: str) -> str | None:
    """The value of input field ``name`` in the last user message of ``call`` (DSPy's ``[[ ## name ## ]]`` markers)."""
    users = [m for m in call.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return None
    match = re.search(
        rf"\[\[ ## {re.escape(name)} ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with|\Z)",
        message_text(users[-1].get("content")),
        re.S,
    )
    return match.group(1) if match else None


def memory_record(record: dict[str, Any], semantic: bool) -> list[Any]:
    parts: list[Any] = []
    hypotheses = record.get("hypotheses") or []
    if semantic:
        noun = "hypothesis" if len(hypotheses) == 1 else "hypotheses"
        title = f"semantic memory: {len(hypotheses)} {noun}" if hypotheses else "semantic memory: empty"
        parts.append(Text(title, style="bold"))
        parts.extend(Text(f"  {i}. {h}") for i, h in enumerate(hypotheses, 1))
    for name in ("reflections",):
        if record.get(name):
            parts.append(Text(f"{name}: {len(record[name])}", style="bold"))
            parts.extend(Text(f"  - {str(x)[:300]}") for x in record[name][:20])
    rules = record.get("rules")
    if isinstance(rules, list) and rules:
        table = Table(
            "rule proposed",
            "label",
            "covers",
            "counterexamples",
            "kept",
            box=box.SIMPLE,
            title="rules checked against the episodes",
        )
        for rule in rules:
            counter = rule.get("counterexamples") or []
            source = rule.get("narrowed_from")
            table.add_row(
                escape(str(rule.get("statement", rule)))
                + (f" (narrowed from: {escape(str(source.get('statement')))})" if isinstance(source, dict) else ""),
                str(rule.get("label", "")),
                str(len(rule.get("coverage") or [])),
                str(len(counter)),
                "yes" if rule.get("statement") in hypotheses else "no",
            )
        parts.append(table)
    parts.extend(rounds(record))
    if record.get("unexplained"):
        parts.append(Text(f"episodes left unexplained: {record['unexplained']}"))
    tokens = record.get("tokens") or {}
    if record.get("wall_seconds") is not None and tokens.get("calls"):
        parts.append(
            Text(
                f"built in {record['wall_seconds']:.0f} s, {tokens.get('calls', 0)} calls, "
                f"{tokens.get('prompt', 0):,} + {tokens.get('completion', 0):,} tokens",
                style="dim",
            )
        )
    cut = record.get("cut") or {}
    if cut:
        parts.append(
            Text(
                "answers that stopped at the token cap (--max-tokens) instead of ending: "
                + ", ".join(f"{step} {n}" for step, n in cut.items()),
                style="yellow",
            )
        )
    return parts


def rounds(record: dict[str, Any]) -> list[Text]:
    """What each generate-check round of ``hdr_grounded`` did, and why the rounds stopped (records that say so)."""
    rounds = [r for r in record.get("rounds") or [] if isinstance(r, dict) and isinstance(r.get("counts"), dict)]
    lines = [
        Text(
            f"round {r.get('round')}: {c.get('proposed', 0)} proposed, {c.get('repeats', 0)} repeats dropped, "
            f"{c.get('verified', 0)} verified, {c.get('refuted', 0)} refuted, {c.get('narrowed', 0)} narrowed"
        )
        for r in rounds
        for c in [r["counts"]]
    ]
    if rounds and record.get("stopped"):
        from memreason.programs.hdr.grounded_consolidator import STOP_REASONS  # DSPy with it: a grounded run's alone

        reason = str(record["stopped"])
        lines.append(Text(f"rounds stopped: {STOP_REASONS.get(reason, reason)}"))
    return lines
