"""One evaluation on a stream task from its options to its run directory: ``python -m eval <program> --task rg:NAME``.

    options = StreamOptions(program="fewshot", task="rg:puzzle24", size=50, lm="openai/gpt-4o-mini")
    outcome = run_stream_cell(options, task=get_task("rg:puzzle24"))   # the same options again continue the run

Checked before any model loads, each in one line: the program runs on stream tasks, the dataset takes the
config, ``learn_from="check"`` only where the task has a check, the knobs build the program, and every count
(``--size``, ``--seed-size``, ``--orders``, ``--batch``, ``--retries``) is within what the data holds (where it
says: ``counts(seed)``) and :data:`MOST` (checked before any item is generated).
"""

from __future__ import annotations

import json
from typing import Any

from memreason.lm.spend import Spend
from memreason.programs import build_program
from memreason.programs.stream import ANSWER_MODES, LEARN_FROM, LESSONS

from ..harness.errors import UsageError
from ..harness.lms import retry_policy
from ..harness.publish import Outcome, publish
from ..harness.setup import RunPlan, check_run_options, open_run
from ..harness.tuned import config_knobs
from .config import DEFAULTS, IDENTITY, StreamConfig, config_of
from .options import MAX_PROBES, StreamOptions
from .run import evaluate_stream

__all__ = [
    "DEFAULTS",
    "IDENTITY",
    "MAX_PROBES",
    "MOST",
    "check_sizes",
    "check_stream",
    "check_verify",
    "run_stream_cell",
    "stream_config",
]

# The most each count may ask for: far beyond any run this project makes, short of a run that never ends.
MOST = {"--size": 10_000, "--seed-size": 1_000, "--orders": 100, "--batch": 10_000, "--retries": 20}


def check_stream(options: StreamOptions, task: Any) -> str:
    """Refuse, in one line, what a run on ``task`` cannot do; the ``learn_from`` it runs with."""
    why = task.why_not(options.program)
    if why is not None:
        raise UsageError(f"{options.program} does not run on {task.name}: {why}")
    if options.answer not in ANSWER_MODES:
        raise UsageError(f"--answer must be one of {', '.join(ANSWER_MODES)}, got {options.answer!r}")
    learn_from = options.learn_from or ("check" if task.checker is not None else "self")
    if learn_from not in LEARN_FROM:
        raise UsageError(f"--learn-from must be one of {', '.join(LEARN_FROM)}, got {learn_from!r}")
    if options.lesson not in LESSONS:
        raise UsageError(f"--lesson must be one of {', '.join(LESSONS)}, got {options.lesson!r}")
    if learn_from == "check" and task.checker is None:
        raise UsageError(f"--learn-from check: {task.name} has no check that needs no reference; use reference, self or none")
    try:
        config = json.loads(options.task_config or "{}")
    except (TypeError, json.JSONDecodeError):
        config = None
    if not isinstance(config, dict):
        raise UsageError(f"--task-config must be a JSON object, got {options.task_config!r}")
    for name, value in (("--size", options.size), ("--orders", options.orders)):
        if value < 1:
            raise UsageError(f"{name} must be at least 1, got {value}")
    for name, value in (("--seed-size", options.seed_size), ("--batch", options.batch), ("--retries", options.retries)):
        if value < 0:
            raise UsageError(f"{name} must be at least 0, got {value}")
    check_verify(options, learn_from)
    return learn_from


def check_verify(options: StreamOptions, learn_from: str) -> None:
    """Refuse, in one line, verified writes a run cannot make."""
    for name, value, low in (
        ("--verify", options.verify, 0),
        ("--verify-margin", options.verify_margin, 0),
        ("--candidates", options.candidates, 1),
        ("--memory-tokens", options.memory_tokens, 0),
    ):
        if value < low:
            raise UsageError(f"{name} must be at least {low}, got {value}")
    if options.verify > MAX_PROBES:
        raise UsageError(f"--verify must be at most {MAX_PROBES} probes a write, got {options.verify}")
    if not options.verify:
        if options.candidates > 1:
            raise UsageError("--candidates: proposals are chosen among by verification; give --verify N too")
        return
    if learn_from in ("self", "none"):
        raise UsageError(
            f"--verify needs a score of the probes: --learn-from reference or check, not {learn_from} "
            "(the model's own judgement, or nothing, cannot verify a write)"
        )


def check_sizes(options: StreamOptions, task: Any, data: Any) -> None:
    """Refuse, in one line and before any item is generated, a count beyond what ``data`` holds (where it says:
    ``counts(seed) -> (test items, seed problems)``) or beyond :data:`MOST`."""
    counts = getattr(data, "counts", None)
    if counts is not None:
        tests, seeds = counts(options.seed)
        if options.size > tests:
            raise UsageError(f"--size {options.size}: {task.name} has {tests} test items; ask for at most {tests}")
        if options.seed_size > seeds:
            raise UsageError(f"--seed-size {options.seed_size}: {task.name} has {seeds} seed problems; ask for at most {seeds}")
    given = {
        "--size": options.size,
        "--seed-size": options.seed_size,
        "--orders": options.orders,
        "--batch": options.batch,
        "--retries": options.retries,
    }
    for name, value in given.items():
        if value > MOST[name]:
            raise UsageError(f"{name} must be at most {MOST[name]:,}, got {value:,}")


def stream_config(options: StreamOptions, task: Any) -> StreamConfig:
    """The run's config from its options, checked (the dataset built with its config, the program with its knobs)."""
    learn_from = check_stream(options, task)
    data = task.data(json.loads(options.task_config or "{}"))  # UsageError for a config the dataset refuses
    check_sizes(options, task, data)
    knobs = config_knobs(options.config, options.program)
    try:
        program = build_program(options.program, task=task, answer=options.answer, retries=options.retries, **knobs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--config {options.config}: {exc}" if options.config else str(exc)) from None
    if options.memory_tokens:
        try:
            program.fit_budget(options.memory_tokens)
        except NotImplementedError:
            raise UsageError(f"--memory-tokens: {options.program} keeps no memory a token budget can cut") from None
    return config_of(options, task=task.name, learn_from=learn_from, knobs=knobs)


def run_stream_cell(options: StreamOptions, *, task: Any, spend: Spend | None = None) -> Outcome:
    """Evaluate ``options.program`` on ``task`` (a :class:`memreason.eval.stream.task.GymTask`), or continue the
    run in ``options.out``."""
    config = stream_config(options, task)
    check_run_options(options)
    opened = open_run(
        options,
        RunPlan(
            name=f"{options.program}-{task.name.replace(':', '-')}",
            config=config,
            keys=IDENTITY,
            defaults=DEFAULTS,
            temperatures={"--temperature": options.temperature},
        ),
        spend=spend,
    )
    return publish(
        options,
        opened.run_dir,
        lambda: evaluate_stream(
            config,
            task,
            lm=opened.task,
            memory_lm=opened.memory,
            run_dir=opened.run_dir,
            progress=not options.no_progress,
            policy=retry_policy(options),
            max_errors=options.max_errors,
            retry_failed=options.retry_failed,
            spend=opened.spend,
        ),
    )
