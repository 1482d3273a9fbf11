"""``python -m eval <program> ...``: evaluate a registered program and write a run directory.

    python -m eval hdr --level 2 --lm openai/gpt-4o-mini --threads 8 --out runs/hdr-L2
    python -m eval hdr --level 2 --lm openai/gpt-4o-mini --out runs/hdr-L2    # same config: continues it
    python -m eval --resume runs/hdr-L2                                        # the saved config, continued

A run directory that already holds a run with the same config is continued, never
overwritten: finished examples are kept, the saved memory is restored, and LM answers come
back from the run's DSPy cache (or the project cache ``--cache`` names). A different config
is refused. Bad input (unknown program, invalid level, unreadable rules file, unknown LM,
missing key, negative limit, a mismatched run directory) gets one line on stderr and exit
code 2, never a traceback; a run stopped by ``--max-errors`` or by memory that could not be
built exits 1 with its work kept.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from memreason.datasets.experience_transfer import LEVELS, RuleTableError
from memreason.programs import PROGRAMS

from .experience_transfer import MODALITIES, ExperienceTransferConfig, evaluate_experience_transfer
from .options import (Parser, UsageError, add_fault_options, add_lm_options, add_run_options, check_out_path, publish,
                      resolve_lms, retry_policy, run_cli, whole)
from .resume import IDENTITY, RunDirError, check_same_config, read_config, resumed_args
from .runs import RunConfig, new_run_dir, use_response_cache
from .tracking import add_mlflow_option, check_mlflow, tracking
from .tuned import TunedError, as_paths, config_knobs, reader_knobs, state_digest


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m eval", description="Evaluate a memory-for-reasoning program.")
    parser.add_argument("program", nargs="?", help=f"one of: {', '.join(PROGRAMS)}")
    data = parser.add_argument_group("data")
    data.add_argument("--level", type=int, help=f"Experience-Transfer level {LEVELS}")
    data.add_argument("--modality", default="text", help="text (structured descriptions) or image (rendered PNGs)")
    data.add_argument("--rules", help="a rule table as JSON (default: the HDR paper's Table 1)")
    data.add_argument("--limit", type=whole("--limit"), help="evaluate only the first N test items")
    data.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    add_lm_options(parser)
    add_fault_options(parser, "scenes", retry_failed=True)
    run = parser.add_argument_group("run")
    run.add_argument("--runs", type=whole("--runs"), default=1, help="repetitions (accuracy mean and std)")
    run.add_argument("--config", type=Path, metavar="BEST.json",
                     help="the program's knobs from a JSON file's \"knobs\" (python -m optimize writes best.json)")
    run.add_argument("--per-object", action="store_true",
                     help="the reasoner labels each object of the scene and the count is computed in code")
    run.add_argument("--retrieve-k", type=whole("--retrieve-k"), metavar="K",
                     help="with --per-object: label each object in its own call, against the K memory entries nearest to it")
    run.add_argument("--program-state", type=Path, metavar="STATE.json",
                     help="a DSPy state file (program.save: demos, instructions) loaded into the program")
    run.add_argument("--out", type=Path, help="run directory (default: runs/<program>-L<level>-<time>); continued when it holds this run")
    run.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue the run in RUN_DIR with its saved config")
    add_run_options(parser, "scenes")
    add_mlflow_option(parser.add_argument_group("tracking"))
    return parser


def main(argv: list[str] | None = None) -> int:
    def command() -> int:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.resume is not None:
            args = resumed_args(parser, args, IDENTITY, kind="an Experience-Transfer run",
                                programs=[name for name, spec in PROGRAMS.items() if spec.task == "experience_transfer"])
        return _run(args)

    return run_cli(command, bad_input=(RuleTableError, RunDirError, TunedError))


def _run(args: argparse.Namespace) -> int:
    if args.program is None:
        raise UsageError(f"name a program ({', '.join(PROGRAMS)}) or --resume RUN_DIR")
    if args.program not in PROGRAMS:
        raise UsageError(f"unknown program {args.program!r}; choose from: {', '.join(PROGRAMS)}")
    spec = PROGRAMS[args.program]
    if spec.task != "experience_transfer":
        if getattr(args, "resume", None) is not None:
            raise UsageError(f"--resume continues Experience-Transfer runs; {args.program} is an {spec.task} program "
                             f"(see python -m eval {args.program} --help)")
        raise UsageError(f"program {args.program!r} is not available yet")
    if args.level is None:
        raise UsageError(f"{args.program} needs --level {{1,2,3}}")
    if args.level not in LEVELS:
        raise UsageError(f"--level must be 1, 2 or 3, got {args.level}")
    if args.modality not in MODALITIES:
        raise UsageError(f"--modality must be text or image, got {args.modality!r}")
    check_mlflow(args)
    check_out_path(args.out)
    knobs, state_digest = _knobs_and_state(args)
    config = ExperienceTransferConfig(
        program=args.program, level=args.level, modality=args.modality, limit=args.limit,
        runs=args.runs, threads=args.threads, seed=args.seed, rules=args.rules, knobs=knobs,
        program_state=str(args.program_state) if args.program_state else None,
    )
    data = config.load_data()  # bad rules files fail here, before any model loads

    run_dir = args.out
    tuned = dict(knobs=knobs, program_state_sha256=state_digest)
    requested = RunConfig.of(args, config, **tuned).to_json()
    continuing = run_dir is not None and (run_dir / "config.json").exists()
    if continuing:
        check_same_config(read_config(run_dir), requested, run_dir)  # before any model loads
    elif run_dir is not None and (run_dir / "examples.jsonl").exists():
        raise RunDirError(f"{run_dir} holds examples but no config.json; choose another --out")

    task, memory = resolve_lms(args)
    if args.modality == "image" and (task.local or memory.local):
        raise UsageError("the local model reads text only: use --modality text, or a vision model with --lm")

    run_dir = run_dir or new_run_dir(Path("runs"), f"{args.program}-L{args.level}")
    run_dir.mkdir(parents=True, exist_ok=True)
    use_response_cache(args.cache or run_dir / "dspy_cache")
    if continuing:
        print(f"continuing the run in {run_dir}", file=sys.stderr)
    else:
        RunConfig.of(args, config, lm=task.spec, memory_lm=memory.spec, out=str(run_dir), resume=None, **tuned).write(run_dir)

    with tracking(args, run_dir):
        results = evaluate_experience_transfer(
            config, task=task, memory=memory, run_dir=run_dir, progress=not args.no_progress, data=data,
            policy=retry_policy(args), max_errors=args.max_errors, retry_failed=args.retry_failed,
        )
        publish(run_dir, results, summary_table([results]), report=not args.no_report)
    return 0


def _knobs_and_state(args: argparse.Namespace) -> tuple[dict[str, Any], str | None]:
    """The knobs of ``--config`` and the digest of ``--program-state``, checked by building the program and loading it."""
    as_paths(args)
    knobs = {**config_knobs(args.config, args.program), **reader_knobs(args)}
    if getattr(args, "retrieve_k", None) is not None and not knobs.get("per_object"):
        raise UsageError("--retrieve-k labels objects one by one: give --per-object too")
    try:
        program = PROGRAMS[args.program].build(**knobs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--config {args.config}: {args.program} does not take these knobs: {exc}") from None
    return knobs, state_digest(program, f"{args.program} with knobs {knobs}", args.program_state)


def summary_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table of accuracy, failures, retries, tokens by role and cost, one row per result."""
    header = ["program", "level", "modality", "n", "runs", "accuracy %", "failed", "retries",
              "memory tokens", "task tokens", "cost $", "wall s"]
    lines = []
    for r in rows:
        acc = r["accuracy"]
        mem, task = r["tokens"]["memory"], r["tokens"]["task"]
        cost = (r.get("cost") or {}).get("total")
        wall = r.get("wall_seconds")
        lines.append([
            r["program"], str(r.get("level", "")), r.get("modality", ""), str(r["examples"]), str(r["runs"]),
            f"{100 * acc['mean']:.1f} ± {100 * acc['std']:.1f}",
            str(sum((r.get("failures") or r.get("errors") or {}).values())), str(sum((r.get("retries") or {}).values())),
            f"{mem['prompt']:,} + {mem['completion']:,}", f"{task['prompt']:,} + {task['completion']:,}",
            "unknown" if cost is None else f"{cost:.4f}", "" if wall is None else f"{wall:.0f}",
        ])
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    render = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    note = "(tokens: prompt + completion)"
    return "\n".join([render(header), render(["-" * w for w in widths]), *map(render, lines), note])
