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
with replacement, the same tasks for both programs (paired), seeded.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal, Sequence

import numpy as np

from ..harness.errors import UsageError
from ..harness.resume import read_examples
from .memory_measures import solved
from .tables import setting

__all__ = ["POOLS", "Attribution", "RunRecords", "bootstrap_ci", "compare", "load_run", "mcnemar_p"]

Pool = Literal["majority", "any", "all"]
POOLS: dict[str, str] = {  # how a task's runs make one verdict: the task is solved by a program when it is solved in ...
    "majority": "more than half of its runs",
    "any": "at least one of its runs",
    "all": "every one of its runs",
}


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
            f"resamples, seed {self.seed})",
        ]
        return "\n".join(lines)


def compare(
    a: RunRecords,
    b: RunRecords,
    *,
    pool: Pool = "majority",
    resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
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
    ids = sorted(a.task_ids())
    solved_a, solved_b, diffs = [], [], []
    for task in ids:
        runs_a, runs_b = _runs(a, task), _runs(b, task)
        solved_a.append(_pooled([solved(r) for r in runs_a], pool))
        solved_b.append(_pooled([solved(r) for r in runs_b], pool))
        diffs.append(_official(runs_a) - _official(runs_b))
    only_a = sum(x and not y for x, y in zip(solved_a, solved_b))
    only_b = sum(y and not x for x, y in zip(solved_a, solved_b))
    both = sum(x and y for x, y in zip(solved_a, solved_b))
    return Attribution(
        a=a.label,
        b=b.label,
        tasks=len(ids),
        runs=a.runs,
        pool=pool,
        both=both,
        only_a=only_a,
        only_b=only_b,
        neither=len(ids) - both - only_a - only_b,
        p_value=mcnemar_p(only_a, only_b),
        difference=sum(diffs) / len(diffs) if diffs else 0.0,
        ci=bootstrap_ci(diffs, resamples=resamples, seed=seed, level=level),
        level=level,
        resamples=resamples,
        seed=seed,
        left_out=left_out,
    )


def mcnemar_p(only_a: int, only_b: int) -> float:
    """McNemar's exact test: the two-sided binomial p-value of ``only_a`` against ``only_b`` discordant pairs,
    2 * P(X <= min) for X ~ Binomial(only_a + only_b, 1/2), at most 1 (1 when there are no discordant pairs)."""
    if only_a < 0 or only_b < 0:
        raise ValueError("discordant counts must be >= 0")
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1))
    return min(1.0, 2 * tail / 2**n)


def bootstrap_ci(
    differences: Sequence[float], *, resamples: int = 10_000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of per-task paired ``differences``: tasks resampled with replacement
    ``resamples`` times from a generator seeded with ``seed`` (the same seed, the same interval)."""
    values = np.asarray(differences, dtype=float)
    if values.size == 0:
        return (0.0, 0.0)
    if resamples < 1 or not 0 < level < 1:
        raise ValueError("resamples must be >= 1 and level within (0, 1)")
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    chunk = max(1, 2_000_000 // values.size)  # resamples drawn a block at a time: bounded memory
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        means[start:stop] = values[rng.integers(0, values.size, size=(stop - start, values.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return (float(low), float(high))


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


def _runs(run: RunRecords, task: str) -> list[dict[str, Any]]:
    return [run.records[(r, task)] for r in range(run.runs)]


def _pooled(solved_runs: list[bool], pool: str) -> bool:
    if pool == "any":
        return any(solved_runs)
    if pool == "all":
        return all(solved_runs)
    return 2 * sum(solved_runs) > len(solved_runs)


def _official(records: list[dict[str, Any]]) -> float:
    return sum(float((r.get("scores") or {}).get("official_score") or 0.0) for r in records) / len(records)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
