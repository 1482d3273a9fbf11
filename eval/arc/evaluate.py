"""One ARC evaluation from its options to its run directory: what ``python -m eval <arc program>`` does.

    options = ArcEvalOptions(program="arcmemo_ps", split="val100", memory="ps.json", limit=10)
    outcome = run_arc(options)        # the same options again continue the run; another config is refused

Rerunning into the same ``out`` with the same config continues the run: finished tasks are
kept, memory is restored from its snapshots, LM answers come back from the run's DSPy cache
(or the one ``cache`` names). A different config is refused (:class:`RunDirError`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memreason.datasets.arc import GENERATED_SPLITS, SPLITS
from memreason.lm.reasoning import Adapted, fit_settings
from memreason.programs import PROGRAMS, build_program
from memreason.programs.arcmemo.memory_file import MemoryFileError
from memreason.programs.registry import GRIDS, programs_for

from ..harness.budget import chars_to_tokens, log_estimate, saved_rates
from ..harness.errors import UsageError
from ..harness.lms import MEMORY_MAX_TOKENS, MEMORY_TEMPERATURE, retry_policy, role_given
from ..harness.options import RunOptions
from ..harness.publish import Outcome, publish
from ..harness.resume import identity_field, identity_keys, read_examples
from ..harness.setup import RunPlan, check_run_options, open_run
from ..harness.tuned import config_knobs, state_digest
from . import sandbox
from .config import KNOB_FIELDS, ArcConfig
from .paper_budget import log_paper_estimate
from .run import evaluate_arc

__all__ = [
    "DEFAULTS",
    "IDENTITY",
    "GENERATION",
    "IDENTITY",
    "MEMORY_GENERATION",
    "ArcEvalOptions",
    "arc_programs",
    "run_arc",
    "split_name",
]

log = logging.getLogger(__name__)

# A generated split's knobs (--seed, --size, --families, --exclude-families, --difficulty), None
# for every other split and in configs saved before they existed; a generated split's config
# holds them resolved (seed 0, the default size, re-ARC's default difficulty).
GENERATION: dict[str, Any] = {"seed": None, "size": None, "families": None, "exclude_families": None, "difficulty": None}

# Before --memory-temperature and --memory-max-tokens, memory calls ran at temperature 0 with the solver's --max-tokens (None).
MEMORY_GENERATION = {"memory_temperature": 0.0, "memory_max_tokens": None}
# Before --answer, the solver's programs came back in the session adapter's fields (a JSON string on the embedded model).
ANSWER_BEFORE = {"answer": "fields"}
DEFAULTS: dict[str, Any] = {
    "split": "val100",
    "attempts": 2,
    "retries": 0,
    "write_gate": "train",
    "cot": False,
    "modality": "text",
    "temperature": 0.7,
    "timeout": 4.0,
    "runs": 1,
    "knobs": {},
    "retry_mode": "inline",
    "reselect": False,
    "reselect_k": None,
    "one_prefill": False,
    **MEMORY_GENERATION,
    **ANSWER_BEFORE,
    **GENERATION,
}


def arc_programs() -> list[str]:
    return programs_for(GRIDS)


@dataclass(kw_only=True)
class ArcOptions(RunOptions):
    """What ARC's commands share: the tasks, the solver, and the memory role's generation settings."""

    split: str = "val100"
    tasks: list[str] | None = None
    limit: int | None = None
    attempts: int = 2
    retries: int = 0
    cot: bool = False
    temperature: float = 0.7
    timeout: float = identity_field(4.0)
    memory_temperature: float | None = identity_field(MEMORY_TEMPERATURE)
    memory_max_tokens: int | None = identity_field(MEMORY_MAX_TOKENS)
    # a generated split's knobs (memreason.datasets.arc.generated), None: its default
    seed: int | None = None
    size: int | None = None
    families: list[str] | None = None
    exclude_families: list[str] | None = None
    difficulty: list[float] | None = None

    def __post_init__(self) -> None:
        given = [key for key in GENERATION if getattr(self, key) is not None]
        if given and self.split not in GENERATED_SPLITS:
            flags = ", ".join("--" + key.replace("_", "-") for key in given)
            raise UsageError(f"{flags}: only for the generated splits ({', '.join(GENERATED_SPLITS)}), not {self.split!r}")

    def generation(self) -> dict[str, Any]:
        """The generated split's knobs, as :class:`ArcConfig` and :class:`BuildConfig` take them."""
        return {key: getattr(self, key) for key in GENERATION}


@dataclass(kw_only=True)
class ArcEvalOptions(ArcOptions):
    """What one ARC evaluation asks for (``python -m eval <arc program>``)."""

    program: str
    memory: str | None = None
    top_k: int | None = None
    continual_every: int | None = None
    write_gate: str = "train"
    modality: str = "text"
    retry_mode: str = "inline"
    reselect: bool = False
    reselect_k: int | None = None
    one_prefill: bool = False
    answer: str = "code"
    runs: int = 1
    config: Path | None = None
    program_state: Path | None = None


# What decides an ARC run's results (checked when a run directory is continued); DEFAULTS: the values of
# configs saved before a key existed.
IDENTITY = identity_keys(ArcConfig, ArcEvalOptions, extra=("task_ids", "knobs", "program_state_sha256"))


def split_name(split: str) -> str:
    """A split's name in a run's name: the directory's own name for a directory of task files."""
    return split if split in SPLITS or split in GENERATED_SPLITS else Path(split).name


def run_arc(options: ArcEvalOptions) -> Outcome:
    """Evaluate ``options.program`` on its ARC tasks (or continue the run in ``options.out``)."""
    if options.program not in arc_programs():
        raise UsageError(f"unknown ARC program {options.program!r}; choose from: {', '.join(arc_programs())}")
    check_run_options(options)
    options, knobs = _config_knobs(options)
    options, solver_adapted = fit_solver_temperature(options)
    log_paper_estimate(options)  # with --preset arcmemo-paper: what the paper's full protocol would cost
    config = ArcConfig(
        program=options.program,
        split=options.split,
        tasks=options.tasks,
        limit=options.limit,
        memory=options.memory,
        attempts=options.attempts,
        retries=options.retries,
        top_k=options.top_k,
        continual_every=options.continual_every,
        write_gate=options.write_gate,
        cot=options.cot,
        modality=options.modality,
        temperature=options.temperature,
        retry_mode=options.retry_mode,
        reselect=options.reselect,
        reselect_k=options.reselect_k,
        one_prefill=options.one_prefill,
        answer=options.answer,
        runs=options.runs,
        threads=options.threads,
        knobs=knobs,
        program_state=str(options.program_state) if options.program_state else None,
        **options.generation(),
    )
    if config.memory_format is None and (options.continual_every or options.top_k):
        raise UsageError(f"{options.program} keeps no memory: --continual-every and --top-k do not apply")
    if (options.reselect or options.reselect_k) and not PROGRAMS[options.program].selects:
        raise UsageError(f"{options.program} does not re-select concepts with an LM: --reselect and --reselect-k do not apply")
    if options.reselect_k and not options.reselect:
        raise UsageError("--reselect-k needs --reselect")
    if options.retry_mode == "passes" and not options.retries:
        log.warning("note: --retry-mode passes with --retries 0 runs only the first pass")
    digest = _check_state(config, options.program_state)
    tasks = config.load_tasks()  # bad splits, ids and files fail here, before any model loads
    try:
        memory_store = config.load_memory()
    except ValueError as exc:
        if isinstance(exc, MemoryFileError):
            raise
        raise UsageError(str(exc)) from None
    temperatures = {"--temperature": options.temperature}
    if config.memory_format is not None:  # memory reads and writes sample too
        temperatures["--memory-temperature"] = options.memory_temperature
    opened = open_run(
        options,
        RunPlan(
            name=f"{options.program}-{split_name(options.split)}",
            config=config,
            keys=IDENTITY,
            defaults=DEFAULTS,
            runs=options.runs,
            extra=dict(task_ids=[t.id for t in tasks], knobs=knobs, program_state_sha256=digest),
            temperatures=temperatures,
            lm_settings=dict(
                slots=options.threads * max(1, options.attempts),  # each task's attempts (and their retries) decode at once
                temperature=base_temperature(options),
                memory_temperature=options.memory_temperature,
                memory_max_tokens=options.memory_max_tokens,
                memory=config.memory_format is not None,  # a program without memory makes no memory calls
            ),
            check_lms=lambda task, memory: _check_modality(options.modality, memory),
            adapted=solver_adapted,
        ),
    )
    run_dir, task, memory, spend = opened.run_dir, opened.task, opened.memory, opened.spend
    _estimate(options, config, tasks, run_dir, spend, task.spec)

    def evaluate() -> dict[str, Any]:
        with sandbox.make_sandbox(max(1, min(options.threads, 4)), options.timeout) as box:
            return evaluate_arc(
                config,
                task=task,
                memory=memory,
                run_dir=run_dir,
                sandbox=box,
                progress=not options.no_progress,
                tasks=tasks,
                initial_memory=memory_store,
                policy=retry_policy(options),
                max_errors=options.max_errors,
                retry_failed=options.retry_failed,
                spend=spend,
            )

    return publish(options, run_dir, evaluate, repetitions=opened.repetitions)


def fit_solver_temperature(options: ArcOptions) -> tuple[Any, list[Adapted]]:
    """The options with the solver's temperature (sent with each attempt) fitted to the task LM: a default one a
    reasoning model refuses becomes the one it takes (recorded), a given one is refused in one line."""
    given = {k: v for k, v in role_given(options, "task").items() if k != "max_tokens"}
    fitted = fit_settings(
        None if options.lm is None or options.lm.startswith("local:") else options.lm,
        {"temperature": options.temperature, **options.lm_args},
        given=given,
        role="task LM",
    )
    changes = [change for change in fitted.adapted if change.setting == "temperature"]
    for change in changes:
        log.info("note: %s (the solver's attempts)", change.line())
    return (replace(options, temperature=fitted.settings["temperature"]) if changes else options), changes


def base_temperature(options: ArcOptions) -> float:
    """The task LM's own temperature in ARC runs: 0, as the solver sends its own with each attempt; the solver's
    where the model takes no temperature 0 (a reasoning model), so nothing is adapted twice."""
    spec = None if options.lm is None or options.lm.startswith("local:") else options.lm
    probe = fit_settings(spec, {"temperature": 0.0, **options.lm_args}, given={}, role="task LM")
    return options.temperature if probe.adapted and probe.settings["temperature"] != 0.0 else 0.0


def _check_modality(modality: str, memory) -> None:
    if modality == "image" and memory.local:
        raise UsageError("the local model reads text only: use --modality text, or a vision model with --memory-lm")


def _estimate(options: ArcEvalOptions, config: ArcConfig, tasks: list, run_dir: Path, spend, spec: str) -> None:
    """Log what the tasks left will roughly spend against the cap (see :mod:`memreason.eval.harness.budget`)."""
    if spend is None:
        return
    finished = read_examples(run_dir / "examples.jsonl", repair=False)
    if options.retry_failed:
        finished = {key: r for key, r in finished.items() if not r.get("failure") and not r.get("error")}
    todo = sum((run, t.id) not in finished for run in range(config.runs) for t in tasks)
    log_estimate(
        spend, unit="tasks", todo=todo, done=len(tasks) * config.runs - todo, **arc_rates(config, tasks, finished), spec=spec
    )


def arc_rates(config: Any, tasks: list, finished: dict) -> dict[str, Any]:
    """The estimate's LM calls per task and prompt tokens per call: from the records ``finished`` holds, else from
    the plan (every attempt and retry a call, one more to select concepts) and the first tasks' grids."""
    rates = saved_rates(finished.values())
    if rates is not None:
        return {"calls": rates[0], "prompt": rates[1], "basis": f"from the {len(finished)} tasks the run has"}
    selects = PROGRAMS[config.program].selects if isinstance(config, ArcConfig) else False  # a call reads memory
    first = tasks[:3]
    return {
        "calls": config.attempts * (1 + config.retries) + (1 if selects else 0),
        "prompt": chars_to_tokens([json.dumps(t.to_json()) for t in first]),
        "basis": f"the first {len(first)} tasks' grids as JSON, 4 characters a token",
    }


def _config_knobs(options: ArcEvalOptions) -> tuple[ArcEvalOptions, dict[str, Any]]:
    """``config``'s knobs: the options with those named like an option (``KNOB_FIELDS``) in place of the given
    values (a new options object: the given one is left as it was), and the others, for the program's constructor."""
    knobs = config_knobs(options.config, options.program)
    named = {name: knobs.pop(name) for name in KNOB_FIELDS if name in knobs}
    return (replace(options, **named) if named else options), knobs


def _check_state(config: ArcConfig, state: Path | None) -> str | None:
    """Build the program with ``config``'s knobs and load ``state`` into it: its sha256, or None without one."""
    try:
        program = build_program(config.program, **config.program_knobs(0))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{config.program} does not take these knobs {config.knobs}: {exc}") from None
    return state_digest(program, config.program, state)
