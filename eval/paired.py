"""Runs compared item by item: each run's per-item scores from its ``examples.jsonl``, paired tests, and their table.

    a = run_items(Path("runs/hdr-L1-..."), label="hdr")            # None when the run kept no examples.jsonl
    b = run_items(Path("runs/episodic_cot-L1-..."), label="episodic_cot")
    test = compare_items(a, b)                                      # UsageError (one line) when they share no item
    lines = paired_table([{"a": a.label, "b": b.label, **test.as_dict()}], a.unit)

What an item is, its score in a run and its key across runs, the run's task says
(:func:`memreason.eval.tasks.task_of`: :attr:`~memreason.eval.tasks.Task.unit`,
:meth:`~memreason.eval.tasks.Task.item_score`, :meth:`~memreason.eval.tasks.Task.item_key`): a scene of an
Experience-Transfer run (1 when the count was right, else 0), a task of an ARC run (its official score; right
when above 0), a query of a problem task's run (ACRE, List Functions, one of your own: 1 when the answer was
right, else 0). Items are matched by key; Experience-Transfer scenes of another data seed or rule table are
other items, as are a problem task's queries of another task or data seed. The statistics are
:mod:`memreason.eval.stats`': McNemar's exact test on right/wrong, and the paired bootstrap CI
and p-value of the mean score difference, each item's score averaged over its runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .harness.errors import UsageError
from .harness.resume import read_examples
from .stats import POOLS, RESAMPLES, SEED, PairedTest, intervals, paired
from .tasks.registry import task_for
from .tasks.task import Task

__all__ = ["RunItems", "compare_items", "format_p", "headline_ci", "paired_table", "run_items"]


@dataclass(frozen=True)
class RunItems:
    """A run's items: each item's score in each of its runs."""

    label: str
    path: Path
    task: Task  # the run's task: what its items are
    scores: dict[str, list[float]]

    @property
    def unit(self) -> str:
        """What the items are, plural ("scenes", "tasks", "queries")."""
        return self.task.unit


def run_items(run_dir: Path, results: dict[str, Any] | None = None, label: str | None = None) -> RunItems | None:
    """The items of the run in ``run_dir`` (``results``: its ``results.json``, read when not given); None when the
    run has no ``examples.jsonl``."""
    run_dir = Path(run_dir)
    examples = run_dir / "examples.jsonl"
    if not examples.exists():
        return None
    if results is None:
        try:
            results = json.loads((run_dir / "results.json").read_text())
        except (OSError, ValueError):
            results = {}
    task = task_for(results)
    config = results.get("config") or {}
    scores: dict[str, list[float]] = {}
    for _, record in sorted(read_examples(examples, repair=False).items()):
        scores.setdefault(task.item_key(record, config), []).append(task.item_score(record))
    return RunItems(label or run_dir.name, run_dir, task, scores)


def compare_items(a: RunItems, b: RunItems) -> PairedTest:
    """A against B on the items both hold (:func:`memreason.eval.stats.paired`); :class:`UsageError` when they
    are runs of other tasks or share no item."""
    if a.unit != b.unit:
        raise UsageError(f"cannot compare {a.label} ({a.path}, {a.unit}) with {b.label} ({b.path}, {b.unit})")
    try:
        return paired(a.scores, b.scores)
    except ValueError:
        raise UsageError(f"cannot compare {a.label} ({a.path}) with {b.label} ({b.path}): no {a.unit} in common") from None


def headline_ci(results: dict[str, Any], items: RunItems | None) -> list[float] | None:
    """The 95% CI (fractions) of a run's headline score (its task's :attr:`~memreason.eval.tasks.Task.headline`:
    accuracy, ARC's official score): the one its results hold, else (results written before intervals were) one
    computed from its items the same way; None without either."""
    found = results.get(task_for(results).headline_ci)
    if found:
        return list(found)
    if items is None or not items.scores:
        return None
    return intervals({None: [sum(v) / len(v) for v in items.scores.values()]})[None]


def paired_table(entries: list[dict[str, Any]], task: Task) -> list[str]:
    """Markdown lines: one row per comparison (``a``, ``b``, optional ``where``, and a :class:`PairedTest`'s
    ``as_dict``) of runs of ``task`` (or of tasks of its items), then what the columns mean."""
    unit = task.unit
    where = any(e.get("where") for e in entries)
    header = ["A", "B", *(["where"] if where else []), unit, "right in A only", "in B only", "McNemar p"]
    header += ["A − B, points [95% CI]", "bootstrap p"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for e in entries:
        items = str(e["items"]) + (
            f" ({e['left_out'][0]} of A's, {e['left_out'][1]} of B's not shared)" if any(e["left_out"]) else ""
        )
        cells = [str(e["a"]), str(e["b"]), *([str(e.get("where") or "")] if where else []), items]
        read = e.get("test", "mcnemar")  # the test to read, in bold
        cells += [str(e["only_a"]), str(e["only_b"]), format_p(e["mcnemar_p"], bold=read == "mcnemar")]
        cells += [
            f"{100 * e['difference']:+.1f} [{100 * e['ci'][0]:+.1f}, {100 * e['ci'][1]:+.1f}]",
            format_p(e["bootstrap_p"], bold=read == "bootstrap"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    item, right, score = task.item, task.right, task.headline.replace("_", " ")
    lines += [
        "",
        f"Paired on the {unit} both rows hold. Right or wrong per {item} ({right}; with several runs, in "
        f"{POOLS['majority']}): McNemar's exact two-sided p on the {unit} right in one row only. A − B: the mean "
        f"{score} difference, each {item} averaged over its runs, with a 95% paired bootstrap CI and two-sided "
        f"p ({RESAMPLES:,} resamples of {unit}, seed {SEED}). The p in bold is the test to read: McNemar's when "
        f"every {item} is simply right or wrong in both rows, the bootstrap's when some {item}'s score lies between.",
    ]
    return lines


def format_p(value: float, *, bold: bool = False) -> str:
    """A p-value to three significant digits (small ones in scientific notation), in bold if asked."""
    text = f"{value:.3g}" if value >= 0.001 else f"{value:.1e}"
    return f"**{text}**" if bold else text
