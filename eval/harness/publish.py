"""A finished run's last files: ``results.json`` and, unless asked not to, ``report.md`` with its plots."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .runs import write_json

__all__ = ["Outcome", "save_results"]


@dataclass
class Outcome:
    """A finished run: its directory, its results and the report written (None without one)."""

    run_dir: Path
    results: dict[str, Any]
    report: Path | None = None


def save_results(run_dir: Path, results: dict[str, Any], *, report: bool = True) -> Path | None:
    """Write ``results.json`` into ``run_dir`` and, with ``report``, the report: its path, or None without one."""
    write_json(run_dir / "results.json", results)
    if not report:
        return None
    from memreason.eval.report import write_run_report  # matplotlib: only once there is something to plot

    return write_run_report(run_dir)
