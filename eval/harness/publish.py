"""A finished run's last files: ``results.json`` and, unless asked not to, ``report.md`` with its plots.

    outcome = publish(options, run_dir, lambda: evaluate_...(config, ...), repetitions=repetitions)

:func:`publish` is how every command that runs a program over examples ends: the run under its
tracking (MLflow with ``--mlflow``), its files written, and only then the checks that turn a run
whose items all failed, or that a cap stopped, into exit 1 (what it has stays in its directory).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .budget import check_stopped
from .options import RunOptions
from .runs import write_json
from .session import check_failures
from .tracking import tracking

__all__ = ["Outcome", "publish", "save_results"]


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


def publish(
    options: RunOptions,
    run_dir: Path,
    evaluate: Callable[[], dict[str, Any]],
    *,
    repetitions: dict[str, Any] | None = None,
    hint: str | None = None,
) -> Outcome:
    """Run ``evaluate()`` under the run's tracking, add ``repetitions`` (:func:`check_repetitions`), save the results
    and the report (unless ``options.no_report``); then raise :class:`RunAborted` if the items failed (by
    ``options.fail_share``, :func:`check_failures`, with ``hint`` as its advice when given) or a cap stopped the run."""
    with tracking(options, run_dir):
        results = evaluate()
        if repetitions:
            results["repetitions"] = repetitions
        report = save_results(run_dir, results, report=not options.no_report)
    check_failures(results, run_dir, options.fail_share, **({"hint": hint} if hint else {}))
    check_stopped(results, run_dir)
    return Outcome(run_dir, results, report)
