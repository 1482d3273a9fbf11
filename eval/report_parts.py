"""Pieces of ``python -m eval report`` shared by the generic report (:mod:`memreason.eval.report`) and the
sections and plots the tasks add (:meth:`memreason.eval.tasks.Task.report_sections`, ``report_plots``):
a run's row, Markdown tables, percentages with their CIs, tokens of a results dict, the plot of score against
tokens.

    rows = [Row("hdr L1", results, task_of(results))]
    table(["run", "score"], [[row.label, pct(*score(row.task, row.results))] for row in rows])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from memreason.lm.tokens import Tokens

if TYPE_CHECKING:
    from .tasks.task import Task

__all__ = [
    "DASH",
    "TOKENS_PLOT",
    "Plot",
    "Row",
    "Section",
    "ci",
    "numeric",
    "pct",
    "role_tokens",
    "scaled",
    "score",
    "table",
    "whole_ticks",
    "with_ci",
]

DASH = "—"


class Row(NamedTuple):
    """A run in a report: its label, its ``results.json``, its task."""

    label: str
    results: dict[str, Any]
    task: Task


Section = Callable[[list[Row]], list[str]]  # Markdown lines of a report's section (none: left out) from its runs


@dataclass(frozen=True)
class Plot:
    """A report's plot: drawn on ``ax`` from its runs by ``draw`` (False: nothing to draw, left out)."""

    caption: str
    file: str
    draw: Callable[[Any, list[Row]], bool]


def score(task: Task, results: dict[str, Any]) -> tuple[float | None, float | None]:
    """(headline score in %, its std over repetitions in %) of a run of ``task``."""
    value, std = task.headline_value(results), task.headline_std(results)
    return (None if value is None else 100 * value), (None if std is None else 100 * std)


def role_tokens(results: dict[str, Any], role: str) -> Tokens:
    return Tokens.of((results.get("tokens") or {}).get(role))


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return lines + [""]


def pct(value: float | None, std: float | None = None) -> str:
    if value is None:
        return DASH
    return f"{value:.1f} ± {std:.1f}" if std is not None else f"{value:.1f}"


def ci(interval: Any) -> str:
    """A 95% CI held as fractions, ``[low, high]`` in percent."""
    if not interval:
        return DASH
    return f"[{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"


def with_ci(value: Any, interval: Any) -> str:
    """A fraction in percent, its 95% CI after it when there is one."""
    text = pct(scaled(value))
    return f"{text} {ci(interval)}" if interval and value is not None else text


def scaled(value: Any) -> float | None:
    return None if value is None else 100 * float(value)


def numeric(key: Any) -> float:
    try:
        return float(key)
    except (TypeError, ValueError):
        return float("inf")


def whole_ticks(ax) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def plot_tokens(ax, rows: list[Row]) -> bool:
    """Each run's headline score against its tokens per repetition (log scale)."""
    points = []
    for name, r, task in rows:
        value, _ = score(task, r)
        tokens = (role_tokens(r, "memory").total + role_tokens(r, "task").total) / max(1, int(r.get("runs") or 1))
        if value is not None and tokens > 0:
            points.append((tokens, value, name))
    if not points:
        return False
    for tokens, value, name in points:
        ax.scatter([tokens], [value], s=40)
        ax.annotate(name, (tokens, value), fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("tokens per repetition (memory + task, prompt + completion)")
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, 105)
    return True


TOKENS_PLOT = Plot("Accuracy against tokens", "accuracy_vs_tokens.png", plot_tokens)
