"""One Experience-Transfer evaluation from its options to its run directory: what ``python -m eval <program>`` does.

    options = EvaluateOptions(program="hdr", level=2, lm="openai/gpt-4o-mini", threads=8, out=Path("runs/hdr-L2"))
    cell = run_cell(options)          # the same options again continue the run; another config is refused
    print(summary_table([cell.results]), cell.run_dir)

A run directory that already holds a run with the same config is continued, never
overwritten: finished examples are kept, the saved memory is restored, and LM answers come
back from the run's DSPy cache (or the project cache ``cache`` names). The tables and the
demo call :func:`run_cell` once per cell.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from memreason.lm.spend import Spend
from memreason.programs import PROGRAMS
from memreason.programs.registry import SCENES

from ..harness.budget import chars_to_tokens, log_estimate, saved_rates
from ..harness.errors import UsageError
from ..harness.lms import retry_policy
from ..harness.options import EvaluateOptions
from ..harness.publish import Outcome, publish
from ..harness.resume import identity_keys, read_examples
from ..harness.setup import RunPlan, check_run_options, open_run
from ..harness.tuned import config_knobs, reader_knobs, state_digest
from ..stats import METHOD
from .run import ExperienceTransferConfig, evaluate_experience_transfer

__all__ = ["IDENTITY", "SAVED_BEFORE", "EvaluateOptions", "experience_transfer_programs", "run_cell", "summary_table"]

log = logging.getLogger(__name__)


def experience_transfer_programs() -> list[str]:
    return [name for name, spec in PROGRAMS.items() if spec.kind == SCENES]


# What decides an Experience-Transfer run's results, and what configs saved before a key existed held.
IDENTITY = identity_keys(ExperienceTransferConfig, EvaluateOptions, extra=("knobs", "program_state_sha256"))
SAVED_BEFORE: dict[str, Any] = {"task": "experience_transfer", "modality": "text", "seed": 0, "runs": 1, "temperature": 0.0}


def run_cell(options: EvaluateOptions, *, spend: Spend | None = None) -> Outcome:
    """Evaluate ``options.program`` (or continue the run in ``options.out``); raises :class:`UsageError`,
    :class:`RunDirError` or the data's own errors on bad input, before any model loads.

    ``spend``: a spending limit shared with other runs (a table's cells), already holding what they recorded;
    without one, ``options.budget_tokens`` and ``options.budget_usd`` cap this run alone, counting what its records
    hold. A run stopped at its limit writes its results and raises :class:`RunAborted` (exit 1)."""
    if options.program not in experience_transfer_programs():
        raise UsageError(
            f"{options.program!r} is not an Experience-Transfer program; choose from: {', '.join(experience_transfer_programs())}"
        )
    if options.modality == "image" and PROGRAMS[options.program].needs_attributes:
        raise UsageError(
            f"{options.program} learns from the episodes' attributes, which images do not carry: use --modality text"
        )
    if options.level is None:
        raise UsageError(f"{options.program} needs --level {{1,2,3}}")
    if options.task != "experience_transfer":  # a run's config names its task
        options = replace(options, task="experience_transfer")
    check_run_options(options)
    knobs, digest = _knobs_and_state(options)
    config = ExperienceTransferConfig(
        program=options.program,
        level=options.level,
        modality=options.modality,
        limit=options.limit,
        runs=options.runs,
        threads=options.threads,
        seed=options.seed,
        rules=options.rules,
        knobs=knobs,
        program_state=str(options.program_state) if options.program_state else None,
    )
    data = config.load_data()  # bad rules files fail here, before any model loads
    opened = open_run(
        options,
        RunPlan(
            name=f"{options.program}-L{options.level}",
            config=config,
            keys=IDENTITY,
            defaults=SAVED_BEFORE,
            runs=options.runs,
            extra=dict(knobs=knobs, program_state_sha256=digest),
            temperatures={"--temperature": options.temperature},
            check_lms=lambda task, memory: _check_modality(options.modality, task, memory),
        ),
        spend=spend,
    )
    run_dir, task, memory, spend = opened.run_dir, opened.task, opened.memory, opened.spend
    _estimate(options, config, data, run_dir, spend, task.spec)

    return publish(
        options,
        run_dir,
        lambda: evaluate_experience_transfer(
            config,
            task=task,
            memory=memory,
            run_dir=run_dir,
            progress=not options.no_progress,
            data=data,
            policy=retry_policy(options),
            max_errors=options.max_errors,
            retry_failed=options.retry_failed,
            spend=spend,
        ),
        repetitions=opened.repetitions,
    )


def _check_modality(modality: str, task, memory) -> None:
    if modality == "image" and (task.local or memory.local):
        raise UsageError("the local model reads text only: use --modality text, or a vision model with --lm")


def _estimate(options: EvaluateOptions, config: ExperienceTransferConfig, data, run_dir: Path, spend, spec: str) -> None:
    """Log what the scenes left will roughly spend against the cap (see :mod:`memreason.eval.harness.budget`)."""
    if spend is None:
        return
    scenes = data.test[: config.limit] if config.limit is not None else data.test
    finished = read_examples(run_dir / "examples.jsonl", repair=False)
    if options.retry_failed:
        finished = {key: r for key, r in finished.items() if not r.get("error")}
    todo = sum((run, s.id) not in finished for run in range(config.runs) for s in scenes)
    rates = saved_rates(finished.values())
    if rates is not None:
        (calls, prompt), basis = rates, f"from the {len(finished)} scenes the run has"
    else:
        first = scenes[:3]
        per_object = config.knobs.get("per_object") and config.knobs.get("retrieve_k")
        calls = sum(len(s.objects) for s in first) / max(1, len(first)) if per_object else 1.0
        context = " ".join(e.text() for e in data.episodes)  # what a memory is made from
        prompt = chars_to_tokens([s.text() for s in first], context)
        basis = f"the first {len(first)} scenes' text and the level's episodes, 4 characters a token"
    log_estimate(
        spend, unit="scenes", todo=todo, done=len(scenes) * config.runs - todo, calls=calls, prompt=prompt, basis=basis, spec=spec
    )


def _knobs_and_state(options: EvaluateOptions) -> tuple[dict[str, Any], str | None]:
    """The knobs of ``config`` and the digest of ``program_state``, checked by building the program and loading it."""
    knobs = {**config_knobs(options.config, options.program), **reader_knobs(options.per_object, options.retrieve_k)}
    if options.retrieve_k is not None and not knobs.get("per_object"):
        raise UsageError("--retrieve-k labels objects one by one: give --per-object too")
    try:
        program = PROGRAMS[options.program].build(**knobs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--config {options.config}: {options.program} does not take these knobs: {exc}") from None
    return knobs, state_digest(program, f"{options.program} with knobs {knobs}", options.program_state)


def summary_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table of accuracy, failures, retries, tokens by role and cost, one row per result."""
    header = [
        "program",
        "level",
        "modality",
        "n",
        "runs",
        "accuracy %",
        "95% CI",
        "failed",
        "retries",
        "memory tokens",
        "task tokens",
        "cost $",
        "wall s",
    ]
    lines = []
    for r in rows:
        acc = r["accuracy"]
        mem, task = r["tokens"]["memory"], r["tokens"]["task"]
        cost = (r.get("cost") or {}).get("total")
        wall = r.get("wall_seconds")
        lines.append(
            [
                r["program"],
                str(r.get("level", "")),
                r.get("modality", ""),
                str(r["examples"]),
                str(r["runs"]),
                f"{100 * acc['mean']:.1f} ± {100 * acc['std']:.1f}",
                f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if (ci := r.get("accuracy_ci")) else "",
                str(sum((r.get("failures") or r.get("errors") or {}).values())),
                str(sum((r.get("retries") or {}).values())),
                f"{mem['prompt']:,} + {mem['completion']:,}",
                f"{task['prompt']:,} + {task['completion']:,}",
                "unknown" if cost is None else f"{cost:.4f}",
                "" if wall is None else f"{wall:.0f}",
            ]
        )
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    render = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    items = "queries" if rows and all(r.get("task") not in (None, "experience_transfer") for r in rows) else "scenes"
    note = f"(tokens: prompt + completion; 95% CI over the {items}, each averaged over the runs: {METHOD})"
    return "\n".join([render(header), render(["-" * w for w in widths]), *map(render, lines), note])
