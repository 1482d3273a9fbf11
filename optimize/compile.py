"""``python -m optimize compile <program> --optimizer bootstrap|mipro|gepa|simba ...``: compile with a DSPy optimizer.

    python -m optimize compile hdr --level 1 --optimizer gepa --trainset-size 20 --out runs/compiled/hdr-gepa
    python -m optimize compile hdr --level 1 --optimizer mipro --config runs/optimize/hdr-L1/best.json
    python -m optimize compile arcmemo_ps --memory ps.json --optimizer bootstrap --trainset-size 10
    python -m eval hdr --level 1 --config DIR/config.json --program-state DIR/program.json   # evaluate the result

Experience-Transfer: the program's memory is built once (``memorize``, on the memory LM),
then its per-scene predictor is compiled on training scenes (the level regenerated with
seed + 1000, none equal to an evaluation scene), one ``dspy.Example(query, scene -> count)``
each; half of them (at most ``--limit``) validate for MIPROv2 and GEPA. ARC: the program
(with ``--memory``) is compiled on ARC training tasks outside the evaluation split.

Optimizers (DSPy 3.4.1): ``bootstrap`` = BootstrapFewShot; ``mipro`` = MIPROv2 (``auto``
light, or ``--candidates N`` for a small fixed budget); ``gepa`` = GEPA, reflection LM = the
memory LM, metric with textual feedback (:mod:`memreason.optimize.metrics`); ``simba`` = SIMBA.
Output in ``--out``: ``program.json`` (the DSPy state), ``config.json`` (knobs, for
``python -m eval --config``), ``memory.json``, ``compile.json`` (what ran, scores).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import dspy

from memreason.datasets.experience_transfer import LEVELS, RuleTable, RuleTableError, make_level
from memreason.eval.experience_transfer import level_episodes, observation
from memreason.eval.options import (Parser, UsageError, add_fault_options, add_lm_options, resolve_lms, retry_policy,
                                    run_cli, whole)
from memreason.eval.runs import new_run_dir, use_response_cache, write_json
from memreason.lm import LMChoice
from memreason.programs import PROGRAMS, build_program

from .cli import arc_data_flags
from .demos import arc_training_tasks, scene_examples, strip_memory, training_level
from .lms import resolve
from .metrics import ArcFeedback, CountFeedback
from .objective import build_memory
from .space import _value

OPTIMIZERS = ("bootstrap", "mipro", "gepa", "simba")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m optimize compile", description="Compile a program's predictors with a DSPy optimizer.")
    parser.add_argument("program", help=f"one of: {', '.join(PROGRAMS)}")
    parser.add_argument("--optimizer", required=True, help=f"one of {', '.join(OPTIMIZERS)}")
    parser.add_argument("--level", type=int, help=f"Experience-Transfer level {LEVELS}")
    parser.add_argument("--split", help="ARC evaluation split whose tasks are kept out of training (default val100)")
    parser.add_argument("--memory", help="ARC: the concept memory file the program reads")
    parser.add_argument("--rules", help="a rule table as JSON (default: the HDR paper's Table 1)")
    parser.add_argument("--seed", type=int, default=0, help="data seed (default 0); training data comes from seed + 1000")
    parser.add_argument("--limit", type=whole("--limit", 1), help="at most N validation examples (default: half the trainset)")
    parser.add_argument("--trainset-size", type=whole("--trainset-size", 1), default=20, help="training examples (default 20)")
    parser.add_argument("--config", type=Path, help="start from a configuration's knobs (best.json of a study)")
    parser.add_argument("--knob", action="append", default=[], metavar="NAME=VALUE", help="a constructor knob, e.g. K=2")
    parser.add_argument("--candidates", type=whole("--candidates", 1),
                        help="MIPROv2: instruction/demo candidates and trials instead of auto=light; SIMBA: candidates")
    parser.add_argument("--max-demos", type=whole("--max-demos", 0), default=4, help="demos per predictor (default 4)")
    parser.add_argument("--budget", type=whole("--budget", 1), help="GEPA: metric calls (default 20 x trainset)")
    parser.add_argument("--out", type=Path, help="output directory (default runs/compiled/<program>-<optimizer>-<time>)")
    parser.add_argument("--threads", type=whole("--threads", 1), default=1, help="optimizer threads")
    add_lm_options(parser, cache_home="<out>")
    add_fault_options(parser, "examples", budget=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_cli(lambda: _run(build_parser().parse_args(argv)), bad_input=(RuleTableError,),
                   continue_hint="the answers so far are cached: rerun the same command")


def parse_knobs(args: argparse.Namespace) -> dict[str, Any]:
    """The constructor knobs of ``--config`` (a study's best.json) and ``--knob NAME=VALUE`` (which win)."""
    knobs: dict[str, Any] = {}
    if getattr(args, "config", None) is not None:
        try:
            knobs.update(json.loads(args.config.read_text()).get("knobs", {}))
        except (OSError, ValueError, AttributeError) as exc:
            raise UsageError(f"cannot read knobs from --config {args.config}: {exc}") from None
    for text in args.knob:
        name, sep, value = text.partition("=")
        if not sep:
            raise UsageError(f"--knob wants NAME=VALUE, got {text!r}")
        knobs[name.strip()] = _value(value.strip())
    return knobs


def _run(args: argparse.Namespace) -> int:
    if args.program not in PROGRAMS:
        raise UsageError(f"unknown program {args.program!r}; choose from: {', '.join(PROGRAMS)}")
    if args.optimizer not in OPTIMIZERS:
        raise UsageError(f"unknown optimizer {args.optimizer!r}; choose from: {', '.join(OPTIMIZERS)}")
    knobs = parse_knobs(args)
    try:
        program = build_program(args.program, **knobs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{args.program} does not take these knobs {knobs}: {exc}") from None
    arc = PROGRAMS[args.program].task == "arc"
    if not arc and args.level not in LEVELS:
        raise UsageError(f"{args.program} needs --level {{1,2,3}}")
    task, memory = resolve_lms(args, resolve=resolve)
    out = args.out or new_run_dir(Path("runs") / "compiled", f"{args.program}-{args.optimizer}")
    out.mkdir(parents=True, exist_ok=True)
    use_response_cache(args.cache or out / "dspy_cache")
    started = time.perf_counter()
    if arc:
        report = compile_arc(args, program, knobs, task, memory, out)
    else:
        report = compile_experience_transfer(args, program, knobs, task, memory, out)
    report.update(program=args.program, optimizer=args.optimizer, knobs=knobs, lm=task.spec, memory_lm=memory.spec,
                  wall_seconds=round(time.perf_counter() - started, 2))
    write_json(out / "config.json", {"program": args.program, "level": args.level, "split": args.split, "memory": args.memory,
                                     "knobs": knobs})
    write_json(out / "compile.json", report)
    print(f"compiled {args.program} with {args.optimizer}: train score {report.get('train_score')}")
    where = f"--level {args.level}" if not arc else arc_data_flags(args.split, args.memory)
    print(f"state: {out / 'program.json'}\nevaluate it: python -m eval {args.program} {where} "
          f"--config {out / 'config.json'} --program-state {out / 'program.json'}")
    return 0


def make_optimizer(name: str, metric, *, task: LMChoice, memory: LMChoice, args, trainset_size: int,
                   labeled_demos: int | None = None, threshold: float | None = None):
    """The DSPy optimizer ``name`` with small, explicit budgets (construct it inside the task LM's context).

    ``labeled_demos`` (default ``--max-demos``): demos taken as they are from the trainset (0 where its
    examples do not fit the predictors); ``threshold``: the score a bootstrapped trace needs (default: any
    truthy score)."""
    demos = args.max_demos
    labeled = demos if labeled_demos is None else labeled_demos
    if name == "bootstrap":
        return dspy.BootstrapFewShot(metric=metric, max_bootstrapped_demos=demos, max_labeled_demos=labeled,
                                     metric_threshold=threshold)
    if name == "mipro":
        budget = dict(auto="light") if args.candidates is None else dict(auto=None, num_candidates=args.candidates)
        return dspy.MIPROv2(metric=metric, prompt_model=memory.lm, task_model=task.lm, max_bootstrapped_demos=demos,
                            max_labeled_demos=labeled, num_threads=args.threads, verbose=False, metric_threshold=threshold,
                            **budget)
    if name == "gepa":
        return dspy.GEPA(metric=metric, reflection_lm=memory.lm, max_metric_calls=args.budget or 20 * trainset_size,
                         num_threads=args.threads, reflection_minibatch_size=min(3, trainset_size), use_merge=False,
                         track_stats=False)
    return dspy.SIMBA(metric=metric, bsize=min(4, trainset_size), num_candidates=args.candidates or 2, max_steps=2,
                      max_demos=demos, prompt_model=memory.lm, num_threads=args.threads)


def run_optimizer(optimizer, name: str, student, trainset, valset, args):
    if name == "mipro":
        extra = {} if args.candidates is None else {"num_trials": args.candidates}
        return optimizer.compile(student, trainset=trainset, valset=valset or None, minibatch=False, **extra)
    if name == "gepa":
        return optimizer.compile(student, trainset=trainset, valset=valset or None)
    if name == "simba":
        return optimizer.compile(student, trainset=trainset, seed=args.seed)
    return optimizer.compile(student, trainset=trainset)


def compile_experience_transfer(args, program, knobs, task: LMChoice, memory: LMChoice, out: Path) -> dict[str, Any]:
    rules = RuleTable.from_json(args.rules) if args.rules else RuleTable.paper()
    data = make_level(args.level, seed=args.seed, rules=rules)
    train_level = training_level(data, seed=args.seed)
    examples = scene_examples(train_level, lambda s: observation(s, "text"), limit=2 * args.trainset_size)
    trainset = examples[: args.trainset_size]
    valset = examples[args.trainset_size:][: args.limit or max(1, args.trainset_size // 2)]
    episodes = level_episodes(data.episodes, "text")
    record = build_memory(program, episodes, data, memory, retry_policy(args))
    write_json(out / "memory.json", record)
    metric = CountFeedback(data, program.hypotheses, scenes=train_level.test)
    with dspy.context(lm=task.lm, adapter=task.adapter()):  # optimizers see the reasoner only (and the memory, kept)
        optimizer = make_optimizer(args.optimizer, metric, task=task, memory=memory, args=args, trainset_size=len(trainset))
        compiled = run_optimizer(optimizer, args.optimizer, program, trainset, valset, args)
        scores = [float(metric(e, compiled(**e.inputs()))) for e in trainset]
    program.reasoner = compiled.reasoner
    strip_memory(program)
    program.save(str(out / "program.json"))
    return {"level": args.level, "trainset": len(trainset), "valset": len(valset), "hypotheses": program.hypotheses,
            "wrong_hypotheses": metric.wrong, "train_score": sum(scores) / len(scores),
            "demos": {name: len(p.demos) for name, p in program.named_predictors()},
            "instructions": {name: p.signature.instructions for name, p in program.named_predictors()
                             if name.startswith("reasoner")}}


def compile_arc(args, program, knobs, task: LMChoice, memory: LMChoice, out: Path) -> dict[str, Any]:
    from memreason.datasets.arc import ArcDataError, load_split
    from memreason.eval.session import shared_adapter
    from memreason.programs.memory_file import MemoryFileError, load_memory

    from .arc_objective import save_state

    try:
        eval_ids = [t.id for t in load_split(args.split or "val100")]
        tasks = arc_training_tasks(eval_ids, limit=2 * args.trainset_size)
        if args.memory:
            program.use_memory(load_memory(args.memory))
    except (ArcDataError, MemoryFileError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if memory.lm is not task.lm and hasattr(program, "set_memory_lm"):
        program.set_memory_lm(memory.lm)
    examples = [dspy.Example(task=t).with_inputs("task") for t in tasks]
    trainset = examples[: args.trainset_size]
    valset = examples[args.trainset_size:][: args.limit or max(1, args.trainset_size // 2)]
    metric = ArcFeedback()
    with dspy.context(lm=task.lm, adapter=shared_adapter(task, memory)):
        optimizer = make_optimizer(args.optimizer, metric, task=task, memory=memory, args=args, trainset_size=len(trainset))
        compiled = run_optimizer(optimizer, args.optimizer, program, trainset, valset, args)
        scores = [float(metric(e, compiled(**e.inputs()))) for e in trainset]
    for _, predictor in compiled.named_predictors():  # demos keep predictor fields only, never the task object
        predictor.demos = [d for d in predictor.demos if "task" not in d]
    save_state(compiled, out / "program.json")  # without the memory LM set on the memory predictors
    return {"split": args.split or "val100", "trainset": len(trainset), "valset": len(valset),
            "train_score": sum(scores) / len(scores),
            "demos": {name: len(p.demos) for name, p in compiled.named_predictors()}}
