"""Where a run stands: memory snapshots at batch boundaries, the log of memory writes, replayed reads.

    memory/run<r>/step-0000.json    the memory as loaded
    memory/run<r>/step-<i>.json     after the write that followed problem i (pass 0)
    memory/run<r>/pass<p>-step-<i>.json   after the write that followed the i-th problem of retry pass p
    memory/run<r>/pass-<p>.json     at the end of pass p (``passes`` retry mode)
    memory/run<r>/writes.jsonl      what each write did and spent (written just before its snapshot)
    memory/run<r>/final.json        at the end, with usage counts
    passes/run<r>.json              the last pass finished (``passes`` retry mode), written after its snapshot

A run in ``passes`` mode continues within pass 0 as an inline run does (from the last snapshot at
a batch boundary); once pass 0 is finished, it continues from the end of the last finished pass:
memory from ``pass-<p>.json``, each task as its latest record of a finished pass, and a pass cut
short is done again (its LM answers from the run's cache).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memreason.files import write_atomically
from memreason.programs.arcmemo.concept_memory import ConceptMemory
from memreason.programs.arcmemo.memory_file import Memory, load_memory, save_memory

from .config import ArcConfig


def resume_point(config: ArcConfig, n: int, done: dict[int, dict], initial: Memory | None, snapshots: Path) -> int:
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


def restore_memory(program, initial: Memory, snapshots: Path, start: int) -> None:
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
        entries = [e for e in read_writes(log) if int(e.get("pass", 0)) == 0 and e["after_problem"] <= start]
        write_json_lines(log, entries)


def replay_read(program, record: dict[str, Any]) -> None:
    """What reading the memory did to it (selection counts), for a task solved by an earlier process."""
    selected = (record.get("read") or {}).get("selected")
    if isinstance(program.memory, ConceptMemory) and isinstance(selected, list):
        program.memory.use(selected)


def read_writes(path: Path) -> list[dict[str, Any]]:
    """The writes of a run in order, one per write point (pass, problem): a later line for the same point wins."""
    if not path.exists():
        return []
    by_point: dict[tuple[int, int], dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
            by_point[(int(entry.get("pass", 0)), int(entry["after_problem"]))] = entry
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a line torn by a crash: its write is done again
    return [by_point[point] for point in sorted(by_point)]


def finished_pass(run_dir: Path, run: int) -> int:
    """The last retry pass of run ``run`` finished (-1: pass 0 is not)."""
    path = run_dir / "passes" / f"run{run}.json"
    try:
        return int(json.loads(path.read_text())["finished"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1


def finish_pass(run_dir: Path, run: int, finished: int) -> None:
    path = run_dir / "passes" / f"run{run}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, lambda handle: handle.write(json.dumps({"finished": finished}) + "\n"))


def restore_pass(program, snapshots: Path, finished: int) -> None:
    """Give ``program`` the memory as it was at the end of pass ``finished``; forget later writes."""
    program.use_memory(load_memory(snapshots / f"pass-{finished}.json"))
    log = snapshots / "writes.jsonl"
    if log.exists():
        write_json_lines(log, [e for e in read_writes(log) if int(e.get("pass", 0)) <= finished])


def write_json_lines(path: Path, entries: list[dict[str, Any]]) -> None:
    """Replace ``path`` by ``entries``, one JSON object per line, atomically."""
    write_atomically(path, lambda handle: handle.writelines(json.dumps(e, default=str) + "\n" for e in entries))
