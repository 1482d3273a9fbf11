"""``python -m optimize <program> ...``: an Optuna study over a program's knobs and demonstrations.

    python -m optimize hdr --level 1 --trials 8 --limit 30
    python -m optimize hdr --level 2 --trials 40 --objectives accuracy,tokens --param K=1:3 --param cot=true
    python -m optimize hdr --level 1 --trials 8 --limit 30 --enqueue K=2,N=3,cot=true,demos=0   # the paper's, first
    python -m optimize arcmemo_ps --split val100 --memory ps.json --trials 20 --limit 10
    python -m optimize hdr --level 1 --trials 40 --study shared --storage postgresql://u:p@host/db   # on every host

The study lives in ``runs/optimize/<program>-<study>/`` (``--out``): ``study.db`` (the
default storage), ``configs/`` (one directory per configuration tried, the files a
``python -m eval`` run writes), ``memories/`` (consolidated memories shared across
trials), ``dspy_cache/``, and the outputs (:mod:`memreason.optimize.outputs`). Rerun the same
command to continue a stopped study; ``--trials`` is the study's total. How workers on
several processes or hosts share one study: see :mod:`memreason.optimize.study`.

Bad input (unknown program, bad space spec, bad storage URL, unknown LM, unknown ARC split,
unreadable or mismatched memory file) gets one line on stderr starting with "error: " and
exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memreason.datasets.experience_transfer import LEVELS, RuleTable, RuleTableError, make_level
from memreason.eval.options import (Parser, UsageError, add_fault_options, add_lm_options, resolve_lms, retry_policy,
                                    run_cli, whole)
from memreason.eval.runs import use_response_cache
from memreason.eval.tracking import add_mlflow_option, check_mlflow, tracking
from memreason.eval.tuned import TunedError, state_digest
from memreason.programs import PROGRAMS, build_program

from .demos import DEMO_SOURCES
from .lms import resolve
from .space import Space, SpaceError, _value, default_space, read_space_file, split_params
from .study import (PRUNERS, SAMPLERS, StudyError, load_study, make_pruner, make_sampler, open_storage, run_workers,
                    sqlite_url)
from .tracking import trial_runs

if TYPE_CHECKING:
    from memreason.datasets.arc import ArcTask

MODALITIES = ("text", "image")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m optimize", description=__doc__.split("\n\n")[0].strip("`"),
                     formatter_class=argparse.RawDescriptionHelpFormatter,
                     epilog="Also: python -m optimize compile <program> --optimizer bootstrap|mipro|gepa|simba (--help there).")
    parser.add_argument("program", help=f"one of: {', '.join(PROGRAMS)}")
    data = parser.add_argument_group("data")
    data.add_argument("--level", type=int, help=f"Experience-Transfer level {LEVELS}")
    data.add_argument("--split", help="ARC split (default val100)")
    data.add_argument("--memory", help="ARC: the concept memory file the program reads (frozen during the study)")
    data.add_argument("--modality", default="text", help="text or image (Experience-Transfer)")
    data.add_argument("--rules", help="a rule table as JSON (default: the HDR paper's Table 1)")
    data.add_argument("--program-state", type=Path, metavar="STATE.json",
                      help="Experience-Transfer: a DSPy state every trial's program starts from, e.g. a compiled "
                           "consolidator (python -m optimize compile consolidator)")
    data.add_argument("--seed", type=int, default=0, help="data seed (default 0); demos come from seed + 1000")
    data.add_argument("--limit", type=whole("--limit", 1), help="evaluate each configuration on the first N examples")
    study = parser.add_argument_group("study")
    study.add_argument("--trials", type=whole("--trials", 1), default=20, help="trials in the study, all workers together (default 20)")
    study.add_argument("--study", help="study name (default L<level> or the split); the directory is runs/optimize/<program>-<study>")
    study.add_argument("--storage", help="Optuna RDB URL shared by workers (default: sqlite in the study directory)")
    study.add_argument("--out", type=Path, help="study directory (default runs/optimize/<program>-<study>)")
    study.add_argument("--objectives", default="accuracy",
                       help="accuracy (maximize), or accuracy,tokens (also minimize tokens: a Pareto front, no pruning)")
    study.add_argument("--param", action="append", default=[], metavar="NAME=SPEC",
                       help="override one dimension: K=1:3 (range), cot=true,false (choices), demos=0 (fixed)")
    study.add_argument("--space", help="a JSON file of NAME: SPEC overriding the declared space")
    study.add_argument("--enqueue", action="append", default=[], metavar="K=2,N=3,...",
                       help="a configuration to try first (e.g. the paper's), all the space's parameters given")
    study.add_argument("--sampler", default="tpe", help=f"one of {', '.join(SAMPLERS)} (default tpe; grid tries every point)")
    study.add_argument("--sampler-seed", type=int, help="seed the sampler (leave out when several workers share a study)")
    study.add_argument("--pruner", default="median",
                       help="median (default) or none; single-objective studies only: Optuna does not prune multi-objective ones")
    study.add_argument("--chunks", type=whole("--chunks", 1), default=3,
                       help="examples are answered in this many growing chunks, accuracy reported to the pruner after each (default 3)")
    study.add_argument("--demo-source", default="labeled", help=f"how demos are made: {' or '.join(DEMO_SOURCES)} (default labeled)")
    study.add_argument("--train-size", type=whole("--train-size", 1), default=40, help="training examples demos are drawn from (default 40)")
    study.add_argument("--n-jobs", type=whole("--n-jobs", 1), default=1, help="trials run at once in this process (threads)")
    study.add_argument("--threads", type=whole("--threads", 1), default=1, help="examples answered in parallel within a trial")
    study.add_argument("--heartbeat", type=whole("--heartbeat", 1), default=60,
                       help="seconds between a running trial's heartbeats; a trial silent for twice this is failed and retried")
    add_lm_options(parser, cache_home="<out>")
    add_fault_options(parser, "examples", budget=False)
    add_mlflow_option(parser.add_argument_group("tracking"),
                      store="mlflow.db in the study directory's parent, runs/optimize/ by default; "
                            "one run for the study, a nested run per trial")
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_cli(lambda: _run(build_parser().parse_args(argv)), bad_input=(SpaceError, StudyError, RuleTableError),
                   continue_hint="rerun the same command to continue the study")


def resolve_space(program: str, params: list[str], space_file: str | None) -> Space:
    space = default_space(program)
    if space_file:
        space = space.override(read_space_file(space_file))
    return space.override(params)


def parse_enqueue(text: str, space: Space) -> dict[str, Any]:
    params = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep:
            raise UsageError(f"--enqueue wants NAME=VALUE,NAME=VALUE, got {text!r}")
        params[name.strip()] = _value(value.strip())
    missing = [n for n in space.names if n not in params]
    unknown = [n for n in params if n not in space.names]
    if missing or unknown:
        raise UsageError(f"--enqueue {text!r}: " + "; ".join(
            ([f"missing {', '.join(missing)}"] if missing else []) + ([f"unknown {', '.join(unknown)}"] if unknown else [])))
    return params


def check_program(program: str, space: Space) -> None:
    """Build the program at one point of the space, so a bad knob name fails before any model loads."""
    knobs, _ = split_params({p.name: p.values[0] for p in space.params})
    try:
        build_program(program, **knobs)
    except (TypeError, ValueError) as exc:
        raise SpaceError(f"{program} does not take these knobs ({', '.join(knobs)}): {exc}") from None


def _run(args: argparse.Namespace) -> int:
    if args.program not in PROGRAMS:
        raise UsageError(f"unknown program {args.program!r}; choose from: {', '.join(PROGRAMS)}")
    check_mlflow(args)
    task_kind = PROGRAMS[args.program].task
    objectives = tuple(o.strip() for o in args.objectives.split(",") if o.strip())
    if objectives not in (("accuracy",), ("accuracy", "tokens")):
        raise UsageError(f"--objectives must be accuracy or accuracy,tokens, got {args.objectives!r}")
    if args.sampler not in SAMPLERS:
        raise UsageError(f"--sampler must be one of {', '.join(SAMPLERS)}, got {args.sampler!r}")
    if args.pruner not in PRUNERS:
        raise UsageError(f"--pruner must be one of {', '.join(PRUNERS)}, got {args.pruner!r}")
    if args.demo_source not in DEMO_SOURCES:
        raise UsageError(f"--demo-source must be one of {', '.join(DEMO_SOURCES)}, got {args.demo_source!r}")
    space = resolve_space(args.program, args.param, args.space)
    check_program(args.program, space)
    enqueue = [parse_enqueue(text, space) for text in args.enqueue]
    from .objective import Setup

    if task_kind == "experience_transfer":
        if args.level not in LEVELS:
            raise UsageError(f"{args.program} needs --level {{1,2,3}}" if args.level is None else f"--level must be 1, 2 or 3, got {args.level}")
        if args.modality not in MODALITIES:
            raise UsageError(f"--modality must be text or image, got {args.modality!r}")
        rules = RuleTable.from_json(args.rules) if args.rules else RuleTable.paper()
        data = make_level(args.level, seed=args.seed, rules=rules)
        default_name = f"L{args.level}"
        state = consolidation_digest(args.program, args.program_state)  # a bad state fails now
    else:
        if args.level is not None:
            raise UsageError(f"{args.program} is an ARC program: use --split, not --level")
        if args.program_state is not None:
            raise UsageError("--program-state starts Experience-Transfer studies only")
        state = None
        data = None
        tasks = load_arc(args)  # bad splits and memory files fail here, before the study directory is made
        default_name = split_name(args.split or "val100")
    study_name = f"{args.program}-{args.study or default_name}"
    study_dir = args.out or Path("runs") / "optimize" / study_name
    study_dir.mkdir(parents=True, exist_ok=True)
    storage = open_storage(args.storage or sqlite_url(study_dir / "study.db"), heartbeat=args.heartbeat)

    task, memory = resolve_lms(args, slots=args.threads * args.n_jobs, resolve=resolve)
    if args.modality == "image" and (task.local or memory.local):
        raise UsageError("the local model reads text only: use --modality text, or a vision model with --lm")
    use_response_cache(args.cache or study_dir / "dspy_cache")

    setup = Setup(program=args.program, level=args.level, split=args.split, modality=args.modality, rules=args.rules,
                  seed=args.seed, limit=args.limit, objectives=objectives, chunks=args.chunks, demo_source=args.demo_source,
                  train_size=args.train_size, threads=args.threads, lm=task.spec, memory_lm=memory.spec,
                  temperature=args.temperature, max_tokens=args.max_tokens, memory_file=args.memory,
                  program_state=str(args.program_state) if args.program_state else None, program_state_sha256=state)
    policy = retry_policy(args)
    if task_kind == "experience_transfer":
        from .objective import ExperienceTransferObjective

        objective = ExperienceTransferObjective(setup, space, study_dir, task, memory, policy, data=data)
    else:
        from .arc_objective import ArcObjective

        objective = ArcObjective(setup, space, study_dir, task, memory, policy, tasks=tasks)

    multi = len(objectives) > 1
    sampler = make_sampler(args.sampler, space_grid=space.grid(), seed=args.sampler_seed, multi=multi)
    study = load_study(study_name, storage, objectives, sampler, make_pruner(args.pruner, multi=multi))
    study.set_user_attr("space", space.describe())
    print(f"study {study_name} in {study_dir}: {args.trials} trials over {space.describe()}", file=sys.stderr)
    from .outputs import best_trials, write_outputs

    setup_record = {"program": args.program, "level": args.level, "split": args.split, "memory": args.memory,
                    "modality": args.modality, "rules": args.rules, "seed": args.seed, "limit": args.limit, "lm": task.spec,
                    "memory_lm": memory.spec, "objectives": list(objectives), "study": study_name,
                    "storage": args.storage or "sqlite (study.db)"}
    with tracking(args, study_dir, name=study_name, params={**setup_record, "trials": args.trials, "space": space.describe()},
                  artifacts=("summary.md", "*.png", "best.json", "pareto.json")) as run:
        ran = run_workers(study, trial_runs(objective, run), trials=args.trials, n_jobs=args.n_jobs, enqueue=enqueue)
        written = write_outputs(study, study_dir, setup_record)
    print(f"this worker ran {ran} trials; memories built {objective.memories.builds}, reused {objective.memories.hits}")
    for t in best_trials(study):
        print(f"best: trial {t.number} {dict(t.params)} accuracy {t.user_attrs.get('accuracy'):.3f} "
              f"tokens {t.user_attrs.get('tokens')}")
    for name, path in written.items():
        print(f"{name}: {path}")
    if "best" in written:
        extra = f"--level {args.level}" if args.level else arc_data_flags(args.split, args.memory)
        state = f" --program-state {written['state']}" if "state" in written else ""
        print(f"evaluate it: python -m eval {args.program} {extra} --config {written['best']}{state}")
    return 0


def load_arc(args: argparse.Namespace) -> list[ArcTask]:
    """The ARC tasks of ``--split`` (first ``--limit``), with ``--memory`` checked against the program."""
    from memreason.datasets.arc import ArcDataError
    from memreason.eval.arc import ArcConfig

    config = ArcConfig(program=args.program, split=args.split or "val100", limit=args.limit, memory=args.memory)
    try:
        tasks = config.load_tasks()
        config.load_memory()
    except (ArcDataError, ValueError) as exc:  # MemoryFileError is a ValueError
        raise UsageError(str(exc)) from None
    return tasks


def split_name(split: str) -> str:
    """A split's name in a study or run name: the directory's own name for a directory of task files."""
    from memreason.datasets.arc import SPLITS

    return split if split in SPLITS else Path(split).name


def arc_data_flags(split: str | None, memory: str | None) -> str:
    """The ``python -m eval`` flags that give an ARC program the data and memory it was tuned on."""
    return f"--split {split or 'val100'}" + (f" --memory {memory}" if memory else "")


def consolidation_digest(program: str, state: Path | None) -> str | None:
    """The sha256 of ``--program-state``, after checking its consolidation loads into ``program`` (None without one)."""
    built = build_program(program)
    if state is not None and not hasattr(built, "load_consolidation"):
        raise UsageError(f"--program-state: {program} builds no memory, so it has no consolidator to start from")
    try:
        return state_digest(built, f"{program}'s consolidator", state, load="load_consolidation")
    except TunedError as exc:
        raise UsageError(str(exc)) from None
