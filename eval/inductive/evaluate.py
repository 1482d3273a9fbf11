"""One evaluation on an inductive task from its options to its run directory: ``python -m eval <program> --task T``.

    options = EvaluateOptions(program="hdr", task="acre", limit=20, lm="openai/gpt-4o-mini")
    cell = run_inductive_cell(options)      # the same options again continue the run; another config is refused

The options are Experience-Transfer's (``memreason.eval.experience_transfer.evaluate.EvaluateOptions``, taken as
any object with its fields, so this package does not import that one); those that only mean something
there (``--level``, ``--rules``, ``--modality image``, ``--per-object``, ``--retrieve-k``,
``--program-state``) are refused in one line, as is a program that does not run on the task. ``--config``
gives the program's knobs (``{"knobs": {"samples": 5}}``), checked by building the program.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from memreason.datasets.inductive import TASKS
from memreason.lm.spend import Spend
from memreason.programs import PROGRAMS, build_program

from ..harness.budget import add_recorded, check_prices, new_spend
from ..harness.errors import UsageError
from ..harness.lms import resolve_lms, retry_policy
from ..harness.paths import check_output_dir
from ..harness.publish import Outcome, publish
from ..harness.resume import continues
from ..harness.runs import RunConfig, open_run_dir
from ..harness.session import check_repetitions
from ..harness.tracking import check_mlflow
from ..harness.tuned import config_knobs
from .run import InductiveConfig, evaluate_inductive

__all__ = ["check_inductive", "inductive_programs", "run_inductive_cell"]

log = logging.getLogger(__name__)

EXPERIENCE_TRANSFER_ONLY = {
    "level": "--level",
    "rules": "--rules",
    "per_object": "--per-object",
    "retrieve_k": "--retrieve-k",
    "program_state": "--program-state",
}


def inductive_programs(task: str | None = None) -> list[str]:
    """The programs that run on ``task`` (any inductive task: ``None``)."""
    return [name for name, spec in PROGRAMS.items() if (spec.inductive and task is None) or task in spec.inductive]


def check_inductive(options: Any) -> None:
    """Refuse, in one line, what an evaluation on an inductive task cannot do."""
    if options.task not in TASKS:
        raise UsageError(f"unknown task {options.task!r}; choose from: experience_transfer, {', '.join(sorted(TASKS))}")
    if options.program not in inductive_programs(options.task):
        raise UsageError(
            f"{options.program} does not run on {options.task}; programs that do: {', '.join(inductive_programs(options.task))}"
        )
    for key, flag in EXPERIENCE_TRANSFER_ONLY.items():
        if getattr(options, key, None) not in (None, False):
            raise UsageError(f"{flag} is an Experience-Transfer option; --task {options.task} does not take it")
    if options.modality != "text":
        raise UsageError(f"--task {options.task} is text only: leave out --modality {options.modality}")


def _knobs(options: Any) -> dict[str, Any]:
    """The program's knobs from ``--config``, checked by building the program with them (one line, exit 2)."""
    config = getattr(options, "config", None)
    knobs = config_knobs(Path(config) if config is not None else None, options.program)  # TunedError: exit 2
    try:
        build_program(options.program, task=options.task, **knobs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--config {config}: {exc}") from None
    return knobs


def run_inductive_cell(options: Any, *, spend: Spend | None = None) -> Outcome:
    """Evaluate ``options.program`` on ``options.task`` (or continue the run in ``options.out``)."""
    check_inductive(options)
    check_mlflow(options)
    check_output_dir(options.out)
    config = InductiveConfig(
        program=options.program,
        task=options.task,
        limit=options.limit,
        runs=options.runs,
        threads=options.threads,
        seed=options.seed,
        knobs=_knobs(options),
    )
    continuing = continues(options.out, RunConfig.of(options, config).to_json())  # before any model loads
    repetitions = check_repetitions(options.runs, {"--temperature": options.temperature}, continuing=bool(continuing))
    check_prices(options.budget_usd, [options.lm, options.memory_lm or options.lm])
    task, memory = resolve_lms(options)
    run_dir = open_run_dir(options.out, f"{options.program}-{options.task}", options.cache)
    if continuing:
        log.info("continuing the run in %s", run_dir)
    else:
        RunConfig.of(options, config, lm=task.spec, memory_lm=memory.spec, out=str(run_dir), resume=None).write(run_dir)
    if spend is None:
        spend = new_spend(options)
        add_recorded(spend, run_dir, task.spec, memory.spec)
    return publish(
        options,
        run_dir,
        lambda: evaluate_inductive(
            config,
            task=task,
            memory=memory,
            run_dir=run_dir,
            progress=not options.no_progress,
            policy=retry_policy(options),
            max_errors=options.max_errors,
            retry_failed=options.retry_failed,
            spend=spend,
        ),
        repetitions=repetitions,
    )
