"""Compile a program's predictors with a DSPy optimizer: what ``python -m optimize compile <program>`` does.

    options = CompileOptions(program="hdr", optimizer="gepa", level=1, trainset_size=20, out=Path("runs/compiled/hdr-gepa"))
    outcome = compile_program(options)
    outcome.state, outcome.config        # python -m eval hdr --level 1 --config CONFIG --program-state STATE

Experience-Transfer: the program's memory is built once (``memorize``, on the memory LM),
then its per-scene predictor is compiled on training scenes (the level regenerated with
seed + 1000, none equal to an evaluation scene), one ``dspy.Example(query, scene -> count)``
each; half of them (at most ``limit``) validate for MIPROv2 and GEPA. ARC: the program
(with ``memory``) is compiled on ARC training tasks outside the evaluation split.

Optimizers (DSPy 3.4.1): ``bootstrap`` = BootstrapFewShot; ``mipro`` = MIPROv2 (``auto``
light, or ``candidates`` for a small fixed budget); ``gepa`` = GEPA, reflection LM = the
memory LM, metric with textual feedback (:mod:`memreason.optimize.metrics`); ``simba`` = SIMBA.
Output in ``out``: ``program.json`` (the DSPy state), ``config.json`` (knobs, for
``python -m eval --config``), ``memory.json``, ``compile.json`` (what ran, scores).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from memreason.datasets.experience_transfer import LEVELS, RuleTable, load_rules, make_level
from memreason.eval.experience_transfer.run import level_episodes, observation
from memreason.eval.harness.budget import capped, chars_to_tokens, check_prices, log_estimate, new_spend
from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.lms import resolve_lms, retry_policy
from memreason.eval.harness.options import LMOptions
from memreason.eval.harness.runs import new_run_dir, use_response_cache, write_json
from memreason.eval.harness.tuned import TunedError, config_knobs
from memreason.files import save_via
from memreason.installed import command
from memreason.lm import LMChoice
from memreason.lm.faults import RunAborted
from memreason.lm.spend import Spend
from memreason.programs import PROGRAMS, build_program
from memreason.programs.registry import GRIDS, SCENES

from .choices import OPTIMIZERS
from .demos import arc_training_tasks, scene_examples, strip_memory, training_level
from .lms import resolve
from .metrics import ArcFeedback, CountFeedback
from .objective import build_memory
from .space import parse_value

__all__ = [
    "OPTIMIZERS",
    "CompileOptions",
    "CompileOutcome",
    "OptimizerOptions",
    "compile_program",
    "make_optimizer",
    "parse_knobs",
    "run_optimizer",
    "spending",
]


@dataclass(kw_only=True)
class OptimizerOptions(LMOptions):
    """What every compile shares: the optimizer, its budgets, the program's knobs, where the result goes."""

    optimizer: str  # one of OPTIMIZERS
    knob: list[str] = field(default_factory=list)  # constructor knobs, "NAME=VALUE"
    max_demos: int = 4  # demos per predictor
    candidates: int | None = None  # MIPROv2: candidates and trials instead of auto=light; SIMBA: candidates
    budget: int | None = None  # GEPA: metric calls (None: 20 x the trainset)
    seed: int = 0
    out: Path | None = None  # the output directory (None: a new one under runs/compiled/)
    threads: int = 1  # optimizer threads


@dataclass(kw_only=True)
class CompileOptions(OptimizerOptions):
    """What compiling a program asks for (``python -m optimize compile <program>``)."""

    program: str
    level: int | None = None  # Experience-Transfer
    rules: str | None = None  # a rule table as JSON (None: the HDR paper's Table 1)
    split: str | None = None  # ARC: the evaluation split whose tasks are kept out of training (None: val100)
    memory: str | None = None  # ARC: the concept memory file the program reads
    limit: int | None = None  # at most N validation examples (None: half the trainset)
    trainset_size: int = 20
    config: Path | None = None  # start from a configuration's knobs (a study's best.json); knob entries win


@dataclass
class CompileOutcome:
    """A compiled program: its directory, the DSPy state and config files ``python -m eval`` reads, what ran."""

    out: Path
    state: Path  # program.json
    config: Path  # config.json
    report: dict[str, Any]  # compile.json


def parse_knobs(options: OptimizerOptions, *, program: str = "", config: Path | None = None) -> dict[str, Any]:
    """The constructor knobs of ``config`` (a study's best.json, written for ``program``) and the options' ``knob``
    entries ``NAME=VALUE`` (which win)."""
    knobs: dict[str, Any] = {}
    if config is not None:
        try:
            knobs.update(config_knobs(Path(config), program))
        except TunedError as exc:
            raise UsageError(str(exc)) from None
    for text in options.knob:
        name, sep, value = text.partition("=")
        if not sep:
            raise UsageError(f"--knob wants NAME=VALUE, got {text!r}")
        knobs[name.strip()] = parse_value(value.strip())
    return knobs


def compile_program(options: CompileOptions) -> CompileOutcome:
    """Compile ``options.program`` with ``options.optimizer`` into ``options.out`` (raises :class:`UsageError` on bad
    input, before any model loads)."""
    if options.program not in PROGRAMS:
        raise UsageError(f"unknown program {options.program!r}; choose from: {', '.join(PROGRAMS)}")
    kind = PROGRAMS[options.program].kind
    if kind not in (SCENES, GRIDS):
        raise UsageError(
            f"{options.program} runs on problem tasks only; compiling covers programs of Experience-Transfer and ARC "
            f"(tune it with a study: {command('optimize')} PROGRAM --task T)"
        )
    if options.optimizer not in OPTIMIZERS:
        raise UsageError(f"unknown optimizer {options.optimizer!r}; choose from: {', '.join(OPTIMIZERS)}")
    knobs = parse_knobs(options, program=options.program, config=options.config)
    try:
        program = build_program(options.program, **knobs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{options.program} does not take these knobs {knobs}: {exc}") from None
    arc = kind == GRIDS
    if not arc and options.level not in LEVELS:
        raise UsageError(f"{options.program} needs --level {{1,2,3}}")
    # the data, read before any model loads: bad rules, splits and memory files fail here
    if arc:
        data = _arc_data(options, program)
    else:
        data = load_rules(options.rules)
    check_prices(options.budget_usd, [options.lm, options.memory_lm or options.lm])
    task, memory = resolve_lms(options, resolve=resolve)
    spend = spending(options)
    task, memory = capped(task, "task", spend, retry_policy(options)), capped(memory, "memory", spend, retry_policy(options))
    out = options.out or new_run_dir(Path("runs") / "compiled", f"{options.program}-{options.optimizer}")
    out.mkdir(parents=True, exist_ok=True)
    use_response_cache(options.cache or out / "dspy_cache")
    started = time.perf_counter()
    if arc:
        report = compile_arc(options, program, data, task, memory, out, spend)
    else:
        report = compile_experience_transfer(options, program, data, task, memory, out, spend)
    report.update(
        program=options.program,
        optimizer=options.optimizer,
        knobs=knobs,
        lm=task.spec,
        memory_lm=memory.spec,
        wall_seconds=round(time.perf_counter() - started, 2),
    )
    write_json(
        out / "config.json",
        {"program": options.program, "level": options.level, "split": options.split, "memory": options.memory, "knobs": knobs},
    )
    write_json(out / "compile.json", report)
    return CompileOutcome(out=out, state=out / "program.json", config=out / "config.json", report=report)


def spending(options: OptimizerOptions) -> Spend | None:
    """A compile's spending limit (None without one). Its work is the optimizer's own loop, not a list of items the
    harness starts, so once the limit is reached every LM call is refused, and :func:`stop_if_spent` ends the compile
    before it writes anything. Every call counts, answers replayed from ``<out>/dspy_cache`` included: the same
    command again replays what the stopped one spent, then goes on."""
    return new_spend(options, refuse=True)


def stop_if_spent(spend: Spend | None, out: Path) -> None:
    """Raise :class:`RunAborted` (exit 1) when ``spend`` refused a call: what came after is not the optimizer's work."""
    if spend is not None and spend.refused:
        raise RunAborted(spend.why(f"{out}/dspy_cache"))


def make_optimizer(
    name: str,
    metric,
    *,
    task: LMChoice,
    memory: LMChoice,
    options: OptimizerOptions,
    trainset_size: int,
    labeled_demos: int | None = None,
    threshold: float | None = None,
):
    """The DSPy optimizer ``name`` with small, explicit budgets (construct it inside the task LM's context).

    ``labeled_demos`` (default ``options.max_demos``): demos taken as they are from the trainset (0 where its
    examples do not fit the predictors); ``threshold``: the score a bootstrapped trace needs (default: any
    truthy score)."""
    demos = options.max_demos
    labeled = demos if labeled_demos is None else labeled_demos
    if name == "bootstrap":
        return dspy.BootstrapFewShot(
            metric=metric, max_bootstrapped_demos=demos, max_labeled_demos=labeled, metric_threshold=threshold
        )
    if name == "mipro":
        budget = dict(auto="light") if options.candidates is None else dict(auto=None, num_candidates=options.candidates)
        return dspy.MIPROv2(
            metric=metric,
            prompt_model=memory.lm,
            task_model=task.lm,
            max_bootstrapped_demos=demos,
            max_labeled_demos=labeled,
            num_threads=options.threads,
            verbose=False,
            metric_threshold=threshold,
            **budget,
        )
    if name == "gepa":
        return dspy.GEPA(
            metric=metric,
            reflection_lm=memory.lm,
            max_metric_calls=options.budget or 20 * trainset_size,
            num_threads=options.threads,
            reflection_minibatch_size=min(3, trainset_size),
            use_merge=False,
            track_stats=False,
        )
    if name == "simba":
        return dspy.SIMBA(
            metric=metric,
            bsize=min(4, trainset_size),
            num_candidates=options.candidates or 2,
            max_steps=2,
            max_demos=demos,
            prompt_model=memory.lm,
            num_threads=options.threads,
        )
    raise ValueError(f"unknown optimizer {name!r}; choose from: {', '.join(OPTIMIZERS)}")


def run_optimizer(optimizer, name: str, student, trainset, valset, options: OptimizerOptions):
    """``optimizer.compile`` with what optimizer ``name`` takes besides the trainset."""
    if name == "mipro":
        extra = {} if options.candidates is None else {"num_trials": options.candidates}
        return optimizer.compile(student, trainset=trainset, valset=valset or None, minibatch=False, **extra)
    if name == "gepa":
        return optimizer.compile(student, trainset=trainset, valset=valset or None)
    if name == "simba":
        return optimizer.compile(student, trainset=trainset, seed=options.seed)
    return optimizer.compile(student, trainset=trainset)


def compile_experience_transfer(
    options: CompileOptions, program, rules: RuleTable, task: LMChoice, memory: LMChoice, out: Path, spend: Spend | None = None
) -> dict[str, Any]:
    data = make_level(options.level, seed=options.seed, rules=rules)
    train_level = training_level(data, seed=options.seed)
    examples = scene_examples(train_level, lambda s: observation(s, "text"), limit=2 * options.trainset_size)
    trainset = examples[: options.trainset_size]
    valset = examples[options.trainset_size :][: options.limit or max(1, options.trainset_size // 2)]
    first = train_level.test[:3]
    context = " ".join(e.text() for e in data.episodes)
    _estimate(spend, options, len(trainset) + len(valset), chars_to_tokens([s.text() for s in first], context), task.spec)
    episodes = level_episodes(data.episodes, "text")
    try:
        record = build_memory(program, episodes, data, memory, retry_policy(options))
    except Exception:
        stop_if_spent(spend, out)
        raise
    write_json(out / "memory.json", record)
    metric = CountFeedback(data, program.hypotheses, scenes=train_level.test)
    with dspy.context(lm=task.lm, adapter=task.adapter()):  # optimizers see the reasoner only (and the memory, kept)
        optimizer = make_optimizer(
            options.optimizer, metric, task=task, memory=memory, options=options, trainset_size=len(trainset)
        )
        try:
            compiled = run_optimizer(optimizer, options.optimizer, program, trainset, valset, options)
            scores = [float(metric(e, compiled(**e.inputs()))) for e in trainset]
        finally:
            stop_if_spent(spend, out)
    program.reasoner = compiled.reasoner
    strip_memory(program)
    save_via(out / "program.json", lambda tmp: program.save(str(tmp)))
    return {
        "level": options.level,
        "trainset": len(trainset),
        "valset": len(valset),
        "hypotheses": program.hypotheses,
        "wrong_hypotheses": metric.wrong,
        "train_score": sum(scores) / len(scores),
        "demos": {name: len(p.demos) for name, p in program.named_predictors()},
        "instructions": {name: p.signature.instructions for name, p in program.named_predictors() if name.startswith("reasoner")},
    }


def _estimate(spend: Spend | None, options: OptimizerOptions, examples: int, prompt: float, spec: str) -> None:
    """Log the compile's rough spend against the cap: one call per example and optimizer pass (the optimizer decides
    how many passes: one for bootstrap, more for MIPROv2, GEPA and SIMBA)."""
    log_estimate(
        spend,
        unit="training and validation examples",
        todo=examples,
        done=0,
        calls=1.0,
        prompt=prompt,
        basis=f"the first examples' inputs, 4 characters a token; {options.optimizer} makes one or more passes",
        spec=spec,
    )


def _arc_data(options: CompileOptions, program) -> list:
    """The ARC training tasks (none of the evaluation split's), with ``options.memory`` loaded into ``program``."""
    from memreason.datasets.arc import ArcDataError, load_split
    from memreason.programs.arcmemo.memory_file import MemoryFileError, load_memory

    try:
        eval_ids = [t.id for t in load_split(options.split or "val100")]
        tasks = arc_training_tasks(eval_ids, limit=2 * options.trainset_size)
        if options.memory:
            program.use_memory(load_memory(options.memory))
    except (ArcDataError, MemoryFileError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return tasks


def compile_arc(
    options: CompileOptions, program, tasks: list, task: LMChoice, memory: LMChoice, out: Path, spend: Spend | None = None
) -> dict[str, Any]:
    from memreason.eval.harness.session import shared_adapter

    from .arc_objective import save_state

    if memory.lm is not task.lm and hasattr(program, "set_memory_lm"):
        program.set_memory_lm(memory.lm)
    examples = [dspy.Example(task=t).with_inputs("task") for t in tasks]
    trainset = examples[: options.trainset_size]
    valset = examples[options.trainset_size :][: options.limit or max(1, options.trainset_size // 2)]
    metric = ArcFeedback()
    _estimate(
        spend, options, len(trainset) + len(valset), chars_to_tokens([json.dumps(t.to_json()) for t in tasks[:3]]), task.spec
    )
    with dspy.context(lm=task.lm, adapter=shared_adapter(task, memory)):
        optimizer = make_optimizer(
            options.optimizer, metric, task=task, memory=memory, options=options, trainset_size=len(trainset)
        )
        try:
            compiled = run_optimizer(optimizer, options.optimizer, program, trainset, valset, options)
            scores = [float(metric(e, compiled(**e.inputs()))) for e in trainset]
        finally:
            stop_if_spent(spend, out)
    for _, predictor in compiled.named_predictors():  # demos keep predictor fields only, never the task object
        predictor.demos = [d for d in predictor.demos if "task" not in d]
    save_state(compiled, out / "program.json")  # without the memory LM set on the memory predictors
    return {
        "split": options.split or "val100",
        "trainset": len(trainset),
        "valset": len(valset),
        "train_score": sum(scores) / len(scores),
        "demos": {name: len(p.demos) for name, p in compiled.named_predictors()},
    }
