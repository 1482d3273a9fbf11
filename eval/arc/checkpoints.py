"""Where a run stands: memory snapshots at batch boundaries, the log of memory writes, replayed reads.

    memory/run<r>/step-0000.json    the memory as loaded
    memory/run<r>/step-<i>.json     after the write that followed problem i
    memory/run<r>/writes.jsonl      what each write did and spent (written just before its snapshot)
    memory/run<r>/final.json        at the end, with usage counts
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memreason.programs.atomic_file import write_atomically
from memreason.programs.concept_memory import ConceptMemory
from memreason.programs.memory_file import Memory, load_memory, save_memory

from .config import ArcConfig


def _resume_point(config: ArcConfig, n: int, done: dict[int, dict], initial: Memory | None, snapshots: Path) -> int:
    """The first task this process passes through Algorithm 1 (a batch boundary with a memory snapshot).

    Finished tasks past the batch of the first unfinished one are forgotten (they read a memory
    that a redone batch may change: only ``--retry-failed`` leaves such tasks)."""
    k = config.continual_every if initial is not None else None
    first_missing = next((i for i in range(n) if i not in done), n)
    if not k:
        return 0
    end = (first_missing // k + 1) * k
    for i in [i for i in done if i >= end]:
        del done[i]
    start = first_missing // k * k
    while start > 0 and not (snapshots / f"step-{start:04d}.json").exists():
        start -= k  # the write after this batch did not finish: do it again
    return start


def _restore(program, initial: Memory, snapshots: Path, start: int) -> None:
    """Give ``program`` the memory as it was at problem ``start``; forget what was logged after it."""
    path = snapshots / f"step-{start:04d}.json"
    if path.exists():
        program.use_memory(load_memory(path))
    else:
        program.use_memory(type(initial).from_json(initial.to_json()))  # a fresh copy per run
        save_memory(program.memory, path)
    for stale in snapshots.glob("step-*.json"):
        if int(stale.stem.split("-")[1]) > start:
            stale.unlink()
    log = snapshots / "writes.jsonl"
    if log.exists():
        entries = [e for e in _read_writes(log) if e["after_problem"] <= start]
        write_json_lines(log, entries)


def _replay_read(program, record: dict[str, Any]) -> None:
    """What reading the memory did to it (selection counts), for a task solved by an earlier process."""
    selected = (record.get("read") or {}).get("selected")
    if isinstance(program.memory, ConceptMemory) and isinstance(selected, list):
        program.memory.use(selected)


def _read_writes(path: Path) -> list[dict[str, Any]]:
    """The writes of a run in order, one per write point (a later line for the same point wins)."""
    if not path.exists():
        return []
    by_point: dict[int, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
            by_point[int(entry["after_problem"])] = entry
        except (ValueError, KeyError, TypeError):
            continue  # a line torn by a crash: its write is done again
    return [by_point[i] for i in sorted(by_point)]


def write_json_lines(path: Path, entries: list[dict[str, Any]]) -> None:
    """Replace ``path`` by ``entries``, one JSON object per line, atomically."""
    write_atomically(path, lambda handle: handle.writelines(json.dumps(e, default=str) + "\n" for e in entries))
