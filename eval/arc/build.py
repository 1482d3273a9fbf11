"""Seeding a memory file from verified solutions: what ``python -m eval build_memory`` does.

    outcome = run_build(BuildOptions(format="ps", out=Path("ps.json"), split="barc_seeds", limit=20))

The run directory (``run_dir``, default ``runs/build_memory-<format>-<split>-<time>``) keeps the
log, the solutions found and the LM cache; the same options again continue the build. ``extend``
continues a memory file instead (a build begun elsewhere, whose run directory is gone): it starts
from the memory in ``out`` and skips the tasks among its sources.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memreason.programs.arcmemo.memory_file import load_memory

from ..harness.budget import log_estimate
from ..harness.errors import UsageError
from ..harness.lms import retry_policy
from ..harness.paths import check_output_dir, check_output_file
from ..harness.publish import Outcome, publish
from ..harness.resume import identity_keys, read_examples
from ..harness.setup import RunPlan, open_run
from ..harness.tracking import check_mlflow
from . import sandbox
from .config import BuildConfig
from .evaluate import DEFAULTS, ArcOptions, arc_rates, base_temperature, fit_solver_temperature, split_name
from .seeding import build_memory

__all__ = ["BUILD_IDENTITY", "BuildOptions", "run_build"]

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class BuildOptions(ArcOptions):
    """What ``build_memory`` asks for: the format and file to write, where the solutions come from."""

    format: str
    out: Path
    split: str = "barc_seeds"
    retries: int = 1
    solutions: str | None = None
    unverified: bool = False
    apart: bool = False
    extend: bool = False
    run_dir: Path | None = None


# What decides a build's results (checked when its run directory is continued).
BUILD_IDENTITY = identity_keys(BuildConfig, BuildOptions, extra=("program",))


def run_build(options: BuildOptions) -> Outcome:
    """Solve (or read) the seed tasks' solutions, verify them, and abstract them into ``options.out``."""
    check_mlflow(options)
    check_output_file(options.out, "--out")
    check_output_dir(options.run_dir, "--run-dir")
    check_output_dir(options.cache, "--cache")
    if options.apart and options.format != "ps":
        raise UsageError(f"--apart keeps PS concepts apart; a {options.format} memory has no titles to revise")
    options, solver_adapted = fit_solver_temperature(options)
    config = BuildConfig(
        format=options.format,
        out=str(options.out),
        split=options.split,
        tasks=options.tasks,
        limit=options.limit,
        solutions=options.solutions,
        unverified=options.unverified,
        apart=options.apart,
        extend=options.extend,
        attempts=options.attempts,
        retries=options.retries,
        cot=options.cot,
        temperature=options.temperature,
        threads=options.threads,
        **options.generation(),
    )
    tasks, given = config.load()  # bad splits, ids, solution folders fail here, before any model loads
    if options.extend and options.out.exists():  # a memory of another format, or a damaged one: now, in one line
        held = load_memory(options.out)
        if held.format != options.format:
            raise UsageError(f"--extend: {options.out} holds a memory of format {held.format!r}, not {options.format!r}")
    opened = open_run(
        options,
        RunPlan(
            name=f"build_memory-{options.format}-{split_name(options.split)}",
            config=config,
            keys=BUILD_IDENTITY,
            defaults={**DEFAULTS, "apart": False, "extend": False},
            extra=dict(program="build_memory"),
            lm_settings=dict(
                temperature=base_temperature(options),
                memory_temperature=options.memory_temperature,
                memory_max_tokens=options.memory_max_tokens,
            ),
            out=options.run_dir,
            flag="--run-dir",
            adapted=solver_adapted,
            written={},
            dir_key="run_dir",
        ),
    )
    run_dir, task, memory, spend = opened.run_dir, opened.task, opened.memory, opened.spend
    _estimate(config, tasks, given, run_dir, spend, task.spec)

    def build() -> dict[str, Any]:
        with sandbox.make_sandbox(max(1, min(options.threads, 4)), options.timeout) as box:
            return build_memory(
                config,
                task=task,
                memory=memory,
                run_dir=run_dir,
                sandbox=box,
                progress=not options.no_progress,
                policy=retry_policy(options),
                max_errors=options.max_errors,
                spend=spend,
            )

    hint = f"{options.out} was left as it was; start again with a new --run-dir"
    return publish(options, run_dir, build, hint=hint)


def _estimate(config: BuildConfig, tasks: list, given: dict, run_dir: Path, spend, spec: str) -> None:
    """Log what the tasks left will roughly spend against the cap: a task solved here costs its attempts and one
    abstraction, a given solution the abstraction alone (see :mod:`memreason.eval.harness.budget`)."""
    if spend is None:
        return
    finished = read_examples(run_dir / "examples.jsonl", repair=False)
    rates = arc_rates(config, tasks, finished)
    if not finished:
        first = tasks[:3]
        rates["calls"] = sum(t.id not in given for t in first) / max(1, len(first)) * rates["calls"] + 1
    todo = sum((0, t.id) not in finished for t in tasks)
    log_estimate(spend, unit="tasks", todo=todo, done=len(tasks) - todo, **rates, spec=spec)
