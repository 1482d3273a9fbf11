"""One evaluation on a problem task from its options to its run directory: ``python -m eval <program> --task T``.

    options = EvaluateOptions(program="hdr", task="acre", limit=20, lm="openai/gpt-4o-mini")
    cell = run_inductive_cell(options, benchmark=get_task("acre"))   # the same options again continue the run

The options are every evaluation's (:class:`memreason.eval.harness.options.EvaluateOptions`); those that only
mean something on Experience-Transfer (``--level``, ``--rules``, ``--modality image``, ``--per-object``,
``--retrieve-k``, ``--program-state``) are refused in one line, as is a program that does not run on the task.
``--config`` gives the program's knobs (``{"knobs": {"samples": 5}}``), checked by building the program. A checked
program's sampled rounds (``samples`` above 1) are sent Qiu et al.'s temperature 0.7 where the memory LM takes it;
a reasoning memory LM that takes none but its own gets its own (``adapted`` in config.json says so), and a
``sample_temperature`` the knobs give that it refuses is refused before any call, in one line
(:mod:`memreason.lm.reasoning`).
"""

from __future__ import annotations

import logging
from typing import Any

from memreason.lm.reasoning import Adapted, fit_settings
from memreason.lm.spend import Spend
from memreason.programs import build_program
from memreason.programs.hdr.checked_program import SAMPLE_TEMPERATURE

from ..harness.errors import UsageError
from ..harness.lms import retry_policy
from ..harness.options import EvaluateOptions
from ..harness.publish import Outcome, publish
from ..harness.resume import identity_keys
from ..harness.setup import RunPlan, check_run_options, open_run
from ..harness.tuned import config_knobs
from .run import InductiveConfig, evaluate_inductive

__all__ = ["IDENTITY", "check_inductive", "fit_sample_temperature", "run_inductive_cell"]

log = logging.getLogger(__name__)

IDENTITY = identity_keys(InductiveConfig, EvaluateOptions, extra=("knobs", "program_state_sha256"))
SAVED_BEFORE: dict[str, Any] = {"modality": "text", "seed": 0, "runs": 1, "temperature": 0.0}

SCENES_ONLY = {
    "level": "--level",
    "rules": "--rules",
    "per_object": "--per-object",
    "retrieve_k": "--retrieve-k",
    "program_state": "--program-state",
}


def check_inductive(options: EvaluateOptions, benchmark: Any) -> None:
    """Refuse, in one line, what an evaluation on ``benchmark`` (a problem task) cannot do."""
    if options.program not in benchmark.programs():
        raise UsageError(
            f"{options.program} does not run on {benchmark.name}; programs that do: {', '.join(benchmark.programs())}"
        )
    given = options.as_dict()
    for key, flag in SCENES_ONLY.items():
        if given.get(key) not in (None, False):
            raise UsageError(f"{flag} is an Experience-Transfer option; --task {benchmark.name} does not take it")
    if options.modality != "text":
        raise UsageError(f"--task {benchmark.name} is text only: leave out --modality {options.modality}")


def _knobs(options: EvaluateOptions, benchmark: Any) -> tuple[dict[str, Any], Any]:
    """The program's knobs from ``--config``, checked by building the program with them (one line, exit 2), and
    the program built."""
    knobs = config_knobs(options.config, options.program)  # TunedError: exit 2
    try:
        program = build_program(options.program, task=benchmark, **knobs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--config {options.config}: {exc}") from None
    return knobs, program


def fit_sample_temperature(options: EvaluateOptions, knobs: dict[str, Any], program: Any) -> tuple[float | None, list[Adapted]]:
    """The temperature a checked program's sampled rounds are sent (None: the memory LM's own, or no sampled rounds)
    and what was adapted: the knobs' ``sample_temperature`` (given: a model that refuses it refuses the run, in one
    line naming it and the memory role), else Qiu et al.'s 0.7 (a default: a reasoning memory LM that takes no
    temperature but 1 gets its own, recorded)."""
    if getattr(program, "samples", 1) <= 1:
        return None, []
    given = "sample_temperature" in knobs
    value = SAMPLE_TEMPERATURE if not given else knobs["sample_temperature"]
    if value is None:
        return None, []
    spec = options.memory_lm or options.lm
    fitted = fit_settings(
        None if spec is None or spec.startswith("local:") else spec,
        {"temperature": float(value), **(options.memory_lm_args or {})},
        given={"temperature": f"--config {options.config} sample_temperature"} if given else {},
        role="memory LM",
    )
    changes = [
        Adapted(c.role, c.model, "sample_temperature", c.asked, c.sent, c.why + "; the memory LM's own is used")
        for c in fitted.adapted
        if c.setting == "temperature"
    ]
    for change in changes:
        log.info("note: %s (%s's sampled proposals)", change.line(), options.program)
    return (None if changes else float(value)), changes


def run_inductive_cell(options: EvaluateOptions, *, benchmark: Any, spend: Spend | None = None) -> Outcome:
    """Evaluate ``options.program`` on ``benchmark`` (a :class:`memreason.eval.tasks.ProblemTask`), or continue
    the run in ``options.out``."""
    check_inductive(options, benchmark)
    check_run_options(options)
    knobs, program = _knobs(options, benchmark)
    sample_temperature, adapted = fit_sample_temperature(options, knobs, program)  # before any call
    config = InductiveConfig(
        program=options.program,
        task=benchmark.name,
        limit=options.limit,
        runs=options.runs,
        threads=options.threads,
        seed=options.seed,
        knobs=knobs,
        sample_temperature=sample_temperature,
    )
    opened = open_run(
        options,
        RunPlan(
            name=f"{options.program}-{benchmark.name}",
            config=config,
            keys=IDENTITY,
            defaults=SAVED_BEFORE,
            runs=options.runs,
            temperatures={"--temperature": options.temperature},
            adapted=adapted,
        ),
        spend=spend,
    )
    return publish(
        options,
        opened.run_dir,
        lambda: evaluate_inductive(
            config,
            benchmark,
            task=opened.task,
            memory=opened.memory,
            run_dir=opened.run_dir,
            progress=not options.no_progress,
            policy=retry_policy(options),
            max_errors=options.max_errors,
            retry_failed=options.retry_failed,
            spend=opened.spend,
        ),
        repetitions=opened.repetitions,
    )
