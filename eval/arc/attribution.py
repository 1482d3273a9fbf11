"""Did memory make the difference? Two ARC runs of the same tasks compared task by task.

    a, b = load_run("runs/arcmemo_ps-val100-..."), load_run("runs/baseline-val100-...")
    found = compare(a, b)            # refuses runs of other tasks, attempts or runs (one line)
    print(found.text())              # solved only by A, only by B, both, neither; McNemar p; bootstrap CI
    mcnemar_p(8, 1)                  # 0.0390625: the exact two-sided test on the discordant tasks
    bootstrap_ci([1.0, 0.0, -0.5], resamples=10_000, seed=0)   # 95% CI of the mean paired difference

A task is solved in one run when its official score is above 0. Over a run directory's
repetitions (``--runs``) a task counts as solved by the program when it is solved in more
than half of them (``pool="majority"``; ``"any"`` and ``"all"`` are the other rules), so
every task is one pair and McNemar's pairs stay independent (run r of A and run r of B share
the sampling seed r, but a task's runs are not independent of each other). The score
difference is that of the official score, each task's averaged over its runs (so its mean
is A's ``official_score`` minus B's), with a percentile bootstrap CI from resampling tasks
with replacement, the same tasks for both programs (paired), seeded, and its bootstrap p-value.
The statistics are :mod:`memreason.eval.stats`' (``mcnemar_p`` and ``bootstrap_ci`` are importable
from here too).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..harness.errors import UsageError
from ..harness.resume import read_examples
from ..stats import LEVEL, POOLS, RESAMPLES, SEED, Pool, bootstrap_ci, mcnemar_p, paired
from .tables import setting

__all__ = [
    "POOLS",
    "Attribution",
    "RunRecords",
    "bootstrap_ci",
    "compare",
    "load_run",
    "mcnemar_p",
]  # the last two: memreason.eval.stats


@dataclass(frozen=True)
class RunRecords:
    """An ARC run directory's task records and what they must share with another run to be compared."""

    path: Path
    label: str
    runs: int
    attempts: int
    records: dict[tuple[int, str], dict[str, Any]]  # (run, task id) -> the task's record

    def task_ids(self) -> set[str]:
        return {task for _, task in self.records}

    def restricted(self, ids: set[str]) -> "RunRecords":
        """The same run, its records of the tasks in ``ids`` only."""
        return replace(self, records={key: r for key, r in self.records.items() if key[1] in ids})


def load_run(path: Path | str) -> RunRecords:
    """A run directory (or its ``results.json``): its results' settings and its ``examples.jsonl`` records."""
    path = Path(path)
    run_dir = path if path.is_dir() else path.parent
    results = _read(run_dir / "results.json") or _read(run_dir / "config.json")
    if results is None:
        raise UsageError(f"{run_dir} holds neither results.json nor config.json: not an ARC run directory")
    examples = run_dir / "examples.jsonl"
    if not examples.exists():
        raise UsageError(f"{run_dir} has no examples.jsonl: a comparison needs each task's record")
    records = read_examples(examples, repair=False)
    label = f"{setting(results)} ({run_dir.name})" if "program" in results else run_dir.name
    return RunRecords(run_dir, label, int(results.get("runs") or 1), int(results.get("attempts") or 2), records)


@dataclass(frozen=True)
class Attribution:
    """Two runs of the same tasks compared: A's program against B's."""

    a: str
    b: str
    tasks: int
    runs: int
    pool: str
    both: int
    only_a: int
    only_b: int
    neither: int
    p_value: float  # exact two-sided McNemar on (only_a, only_b)
    difference: float  # official score of A minus B, a fraction
    ci: tuple[float, float]  # its bootstrap CI
    level: float
    resamples: int
    seed: int
    left_out: tuple[int, int] = (0, 0)  # tasks of A, of B, not in the other run (``common=True``)
    bootstrap_p: float = 1.0  # two-sided paired bootstrap p of the score difference (memreason.eval.stats)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ci": list(self.ci)}

    def text(self) -> str:
        """The comparison as Markdown: the 2x2 table of tasks, the McNemar p-value, the score difference and its CI."""
        rule = "official score above 0" + (f" in {POOLS[self.pool]}" if self.runs > 1 else "")
        common = (
            f" (the tasks both ran; left out: {self.left_out[0]} of A's, {self.left_out[1]} of B's)" if any(self.left_out) else ""
        )
        lines = [
            f"Attribution: A = {self.a}, B = {self.b}; {self.tasks} tasks{common}, {self.runs} run(s) each (solved: {rule})",
            "",
            "| | B solved | B unsolved |",
            "|---|---|---|",
            f"| A solved | {self.both} (both) | {self.only_a} (only A) |",
            f"| A unsolved | {self.only_b} (only B) | {self.neither} (neither) |",
            "",
            f"McNemar exact two-sided p = {self.p_value:.4g} ({self.only_a} tasks solved only by A, {self.only_b} only by B)",
            f"official score A - B: {100 * self.difference:+.2f} points, {100 * self.level:g}% CI "
            f"[{100 * self.ci[0]:+.2f}, {100 * self.ci[1]:+.2f}] (bootstrap over tasks, {self.resamples:,} paired "
            f"resamples, seed {self.seed}; bootstrap p = {self.bootstrap_p:.4g})",
        ]
        return "\n".join(lines)


def compare(
    a: RunRecords,
    b: RunRecords,
    *,
    pool: Pool = "majority",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    common: bool = False,
) -> Attribution:
    """Compare run A with run B task by task; :class:`UsageError` (one line) when they are not runs of the same
    tasks, attempts and number of runs, or one of them lacks a task's record. With ``common``, on the tasks
    both runs hold (e.g. a run of the first 26 tasks against one of 52), saying how many each left out."""
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")
    left_out = (0, 0)
    if common:
        shared = a.task_ids() & b.task_ids()
        if not shared:
            raise UsageError(f"{a.path} and {b.path} have no task in common")
        left_out = (len(a.task_ids() - shared), len(b.task_ids() - shared))
        a, b = a.restricted(shared), b.restricted(shared)
    _same_tasks(a, b)
    found = paired(_scores(a), _scores(b), pool=pool, resamples=resamples, seed=seed, level=level)
    return Attribution(
        a=a.label,
        b=b.label,
        tasks=found.items,
        runs=a.runs,
        pool=pool,
        both=found.both,
        only_a=found.only_a,
        only_b=found.only_b,
        neither=found.neither,
        p_value=found.mcnemar_p,
        difference=found.difference,
        ci=found.ci,
        level=level,
        resamples=resamples,
        seed=seed,
        left_out=left_out,
        bootstrap_p=found.bootstrap_p,
    )


def _same_tasks(a: RunRecords, b: RunRecords) -> None:
    if a.task_ids() != b.task_ids():
        only_a, only_b = sorted(a.task_ids() - b.task_ids()), sorted(b.task_ids() - a.task_ids())
        what = "; ".join(f"{len(ids)} only in {run.path} (e.g. {ids[0]})" for ids, run in ((only_a, a), (only_b, b)) if ids)
        raise UsageError(f"cannot compare runs of different tasks: {what}")
    for key in ("attempts", "runs"):
        if getattr(a, key) != getattr(b, key):
            raise UsageError(
                f"cannot compare runs with different {key}: {getattr(a, key)} in {a.path}, {getattr(b, key)} in {b.path}"
            )
    for run in (a, b):
        for task in sorted(run.task_ids()):
            missing = [r for r in range(run.runs) if (r, task) not in run.records]
            if missing:
                raise UsageError(f"{run.path} has no record of task {task} in run {missing[0]} (an unfinished run?)")


def _scores(run: RunRecords) -> dict[str, list[float]]:
    """Each task's official score in each run (solved: above 0)."""
    return {task: [official(run.records[(r, task)]) for r in range(run.runs)] for task in run.task_ids()}


def official(record: dict[str, Any]) -> float:
    """A task record's official score (0 when it has none: the task failed before scoring)."""
    return float((record.get("scores") or {}).get("official_score") or 0.0)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
