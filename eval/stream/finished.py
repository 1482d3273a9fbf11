"""A finished stream run asked again, recognised from its directory before any model loads or any item is made.

    found = finished_run(options)          # options: StreamOptions as the command line gave them
    if found is None:                      # anything left to do, or anything in doubt: the run goes on as usual
        outcome = task.run(options)

Repeating the command of a finished run (``--out DIR`` holding it) answers nothing: the run's own path would
import DSPy, LiteLLM and reasoning-gym, build the task and the program and resolve the models, only to find
every item answered. Here the run directory alone decides, in a fraction of a second, and the run's saved
``results.json`` and ``report.md`` are what the command prints; nothing in the directory changes.

A run counts as finished only when all of these hold; otherwise :func:`finished_run` says None and the usual
path decides (continues the run, refuses another run's directory, answers the failed items again):

- the options ask for nothing beyond the run's files: no ``--mlflow``, no ``--budget-tokens`` or ``--budget-usd``;
- ``config.json`` holds the same identity as the request (:data:`memreason.eval.stream.config.IDENTITY`: program,
  task and its config, sizes, protocol, models and their settings, knobs), and ``results.json`` was made for it;
- the directory is not in use by another process, and holds nothing damaged;
- ``examples.jsonl`` answers ``size`` distinct items in every order, none with an error;
- the seed memory and, with ``batch`` > 0, the last batch's snapshot of every order are saved (their writes made);
- ``results.json`` is newer than the examples and the memory, and ``report.md`` newer than it (unless
  ``--no-report``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memreason.datasets.gym_checks import checker_for

from ..harness.errors import UsageError
from ..harness.resume import RunDirError, continues, read_examples
from ..harness.runs import RunConfig, hold_run_dir
from ..harness.tuned import TunedError, config_knobs
from ..tasks.registry import TASKS, load_plugins
from .config import DEFAULTS, IDENTITY, StreamConfig, config_of
from .options import StreamOptions

__all__ = ["Finished", "default_learn_from", "finished_run"]

log = logging.getLogger(__name__)

GYM_PREFIX, SCENES_PREFIX = "rg:", "et:"  # memreason.eval.stream.task's prefixes (that module imports more)


@dataclass
class Finished:
    """A finished run as its directory holds it: the directory, its results and its report (None with
    ``--no-report``), as :class:`memreason.eval.harness.publish.Outcome` has them."""

    run_dir: Path
    results: dict[str, Any]
    report: Path | None = None


def default_learn_from(task: str) -> str | None:
    """What writes learn from on the task named ``task`` when ``--learn-from`` is not given (``check`` where it has a
    check, else ``self``), where that is known without building the task; None where it is not."""
    load_plugins()
    if task in TASKS:  # registered already, or a task of your own
        return "check" if getattr(TASKS[task], "checker", None) is not None else "self"
    if task.startswith(GYM_PREFIX):
        return "check" if checker_for(task[len(GYM_PREFIX) :]) is not None else "self"
    if task.startswith(SCENES_PREFIX):
        return "self"  # Experience-Transfer's scenes have no check
    return None


def finished_run(options: StreamOptions) -> Finished | None:
    """The finished run ``options.out`` holds for ``options``, read from its files; None when anything is left to
    do, or anything is in doubt (see the module's docstring)."""
    out = options.out
    if out is None or options.mlflow is not None or options.budget_tokens is not None or options.budget_usd is not None:
        return None
    if not (out / "config.json").is_file() or not (out / "results.json").is_file():
        return None
    learn_from = options.learn_from or default_learn_from(options.task)
    if learn_from is None:
        return None
    try:
        knobs = config_knobs(options.config, options.program)
        config = config_of(options, task=options.task, learn_from=learn_from, knobs=knobs)
        requested = RunConfig.of(options, config).to_json()
        if not continues(out, requested, keys=IDENTITY, defaults=DEFAULTS):
            return None
        hold_run_dir(out)  # this process is now the run's one writer, as the usual path would be
    except (RunDirError, TunedError, UsageError, ValueError, OSError):
        return None  # said, in the same words, by the usual path
    results = _read_results(out / "results.json")
    if results is None or not _made_for(results, config) or not _complete(out, config):
        return None
    report = None if options.no_report else out / "report.md"
    if not _fresh(out, config, report):
        return None
    log.info("continuing the run in %s", out)
    return Finished(out, results, report)


def _read_results(path: Path) -> dict[str, Any] | None:
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return results if isinstance(results, dict) else None


def _made_for(results: dict[str, Any], config: StreamConfig) -> bool:
    """Whether ``results`` are those of a whole run of ``config``: its config, every item, every order, not stopped."""
    asked = json.loads(json.dumps({k: v for k, v in asdict(config).items() if k != "threads"}, default=str))
    execution = results.get("execution") if isinstance(results.get("execution"), dict) else {}
    return (
        results.get("config") == asked
        and results.get("examples") == config.size
        and results.get("orders") == config.orders
        and not execution.get("stopped")
        and isinstance(results.get("accuracy"), dict)
    )


def _complete(out: Path, config: StreamConfig) -> bool:
    """Whether every item of every order is answered without an error, and every write is made and saved."""
    try:
        records = read_examples(out / "examples.jsonl", repair=False)
    except (RunDirError, OSError):
        return False
    if any(record.get("error") for record in records.values()):
        return False  # the usual path decides: --retry-failed answers them again
    for order in range(config.orders):
        if len({key for run, key in records if run == order}) != config.size:
            return False
    return all(path.is_file() for path in _memory_files(out, config))


def _memory_files(out: Path, config: StreamConfig) -> list[Path]:
    """The memory files a whole run saved: the seed memory, then each order's last batch (with ``batch`` > 0)."""
    files = [out / "memory" / "seed.json"]
    if config.batch:
        last = (config.size + config.batch - 1) // config.batch - 1
        files += [out / "memory" / f"order{order}" / f"batch{last:04d}.json" for order in range(config.orders)]
    return files


def _fresh(out: Path, config: StreamConfig, report: Path | None) -> bool:
    """Whether ``results.json`` was written after the examples and every memory snapshot, and ``report`` (where one
    is asked for) after it: nothing changed since the run last summed itself up."""
    try:
        written = (out / "results.json").stat().st_mtime_ns
        inputs = [out / "examples.jsonl", *_memory_files(out, config), *(out / "memory").glob("order*/batch*.json")]
        if any(path.stat().st_mtime_ns > written for path in inputs):
            return False
        return report is None or report.stat().st_mtime_ns >= written
    except OSError:
        return False
