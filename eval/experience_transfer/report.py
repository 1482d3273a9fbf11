"""What ``python -m eval report`` adds for Experience-Transfer runs
(:class:`memreason.eval.experience_transfer.task.ExperienceTransfer` gives it): accuracy by objects in the
scene, and the plots of accuracy by method and level and by objects."""

from __future__ import annotations

from typing import Any

from ..report_parts import DASH, TOKENS_PLOT, Plot, Row, numeric, score, table, whole_ticks, with_ci

__all__ = ["PLOTS", "SECTIONS", "by_objects"]


def by_objects(rows: list[Row]) -> list[str]:
    """Accuracy (95% CI) by the number of objects in the scene (results with ``accuracy_by_objects``)."""
    found = [
        (n, r["accuracy_by_objects"], r.get("accuracy_by_objects_ci") or {}) for n, r, _ in rows if r.get("accuracy_by_objects")
    ]
    if not found:
        return []
    counts = sorted({k for _, by, _ in found for k in by}, key=lambda k: int(k) if str(k).isdigit() else 99)
    cells = [[n] + [with_ci(by[k], cis.get(k)) if k in by else DASH for k in counts] for n, by, cis in found]
    return ["## Accuracy by objects in the scene (%, 95% CI)", ""] + table(["run"] + [f"{k} objects" for k in counts], cells)


def plot_accuracy(ax, rows: list[Row]) -> bool:
    """Accuracy by method and level, with the std over repetitions."""
    found = [row for row in rows if row.results.get("accuracy")]
    if not found:
        return False
    methods = list(dict.fromkeys(_method(n, r) for n, r, _ in found))
    levels = sorted({r.get("level") for _, r, _ in found}, key=lambda v: (v is None, v))
    width = 0.8 / max(1, len(methods))
    for i, method in enumerate(methods):
        xs, ys, errs = [], [], []
        for j, level in enumerate(levels):
            match = [(r, task) for n, r, task in found if _method(n, r) == method and r.get("level") == level]
            if match:
                value, std = score(match[0][1], match[0][0])
                xs.append(j + (i - (len(methods) - 1) / 2) * width)
                ys.append(value)
                errs.append(std or 0)
        bars = ax.bar(xs, ys, width, yerr=errs, capsize=3, label=method)
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=2)
    ax.set_xticks(range(len(levels)), [f"Level {v}" if v is not None else "—" for v in levels])
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7, loc="upper right")
    return True


def _method(name: str, results: dict[str, Any]) -> str:
    level = results.get("level")
    return name.replace(f" L{level}", "", 1) if level is not None else name


def plot_objects(ax, rows: list[Row]) -> bool:
    """Accuracy by the number of objects in the scene, a line per run."""
    found = [(n, r["accuracy_by_objects"]) for n, r, _ in rows if r.get("accuracy_by_objects")]
    if not found:
        return False
    for name, by in found:
        keys = sorted(by, key=numeric)
        ax.plot([numeric(k) for k in keys], [100 * by[k] for k in keys], marker="o", label=name)
    whole_ticks(ax)
    ax.set_xlabel("objects in the scene")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7)
    return True


SECTIONS = (by_objects,)
PLOTS = (
    Plot("Accuracy by method and level", "accuracy_by_method.png", plot_accuracy),
    TOKENS_PLOT,
    Plot("Accuracy by objects in the scene", "accuracy_by_objects.png", plot_objects),
)
