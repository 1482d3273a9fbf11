"""``python -m eval <arc program> | build_memory | arc_table ...``: ARC evaluation, memory seeding, tables.

    python -m eval arcmemo_ps --split val100 --memory ps.json [--attempts 2] [--retries 1] [--top-k 5]
                              [--continual-every 10] [--write-gate train|test] [--limit 10] [--threads 2] ...
    python -m eval arcmemo_oe --memory oe.json --retries 2 --retry-mode passes --continual-every 10 [--reselect]
    python -m eval build_memory --format ps --split barc_seeds --limit 20 --out ps.json [--solutions DIR|rearc]
    python -m eval arc_table runs/arcmemo_ps-val100-*/ runs/baseline-val100-*/
    python -m eval arc_table --compare RUN_A RUN_B   # also: tasks solved only by each, McNemar p, bootstrap CI
    python -m eval arcmemo_ps --resume runs/arcmemo_ps-val100-...   # continue a run with its saved config
    python -m eval arcmemo_ps --split val100 --memory ps.json --config best.json --program-state best_program.json

Rerunning into the same ``--out`` (``--run-dir`` for build_memory) with the same config
continues the run. LM faults are retried with backoff (``--lm-retries``, ``--backoff``,
``--lm-timeout``: ``--retries`` and ``--timeout`` are the solver's feedback retries and the
sandbox's time limit); ``--max-errors N`` stops a run after more than N failed tasks (exit 1,
work kept). Bad input gets one line on stderr starting with "error: " and exit code 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memreason.datasets.arc.generated import GENERATED_SPLITS, REARC_DIFFICULTY
from memreason.datasets.arc.splits import SPLITS
from memreason.eval.harness.errors import UsageError
from memreason.files import read_json_file
from memreason.programs.registry import GRIDS, programs_for

from .options import Parser, add, add_fault_options, add_lm_options, add_run_options, number, out_dir, out_file, text, whole
from .resume import checked_values, resumed_args

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    for name in programs_for(GRIDS):
        parser = commands.add_parser(
            name, help=f"evaluate {name} on ARC tasks", description=f"Evaluate {name} on ARC tasks (ArcMemo paper)."
        )
        _evaluate_options(parser)
        parser.set_defaults(program=name, handler=lambda args, parser=parser: evaluate(args, parser))
    build = commands.add_parser(
        "build_memory",
        help="seed a memory file from verified solutions",
        description="Seed a memory file from verified solutions.",
    )
    _build_options(build)
    build.set_defaults(handler=build_memory)
    table = commands.add_parser(
        "arc_table",
        help="ARC results as the paper's tables",
        description="Print ARC runs' results as the ArcMemo paper's tables.",
    )
    table.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories (or their results.json files)")
    table.add_argument(
        "--compare",
        action="store_true",
        help="two runs of the same tasks: after the tables, the tasks solved only by each, McNemar's exact p "
        "and a bootstrap CI of the score difference (first run A, second B)",
    )
    table.add_argument(
        "--common",
        action="store_true",
        help="with --compare: compare on the tasks both runs hold (says how many each left out)",
    )
    table.set_defaults(handler=arc_table)


def _common(parser: Parser, default_split: str) -> None:
    data = parser.add_argument_group("data")
    add(
        data,
        "--split",
        default=default_split,
        help=f"{', '.join(SPLITS)}; generated: {', '.join(GENERATED_SPLITS)}; or a directory of ARC JSON files "
        f"(default {default_split})",
    )
    add(data, "--tasks")
    add(data, "--limit", help="only the first N tasks")
    generated = parser.add_argument_group("generated splits (1D-ARC, re-ARC: docs/arcmemo.md)")
    add(generated, "--seed", default=None, help="data seed (default 0)")
    generated.add_argument(
        "--size",
        type=whole("--size"),
        metavar="N",
        help="tasks, cycling through the families (default: one per family, at most 100)",
    )
    generated.add_argument("--families", type=_names("--families"), metavar="NAMES", help="only these comma-separated families")
    generated.add_argument(
        "--exclude-families", type=_names("--exclude-families"), metavar="NAMES", help="leave out these comma-separated families"
    )
    generated.add_argument(
        "--difficulty",
        type=_difficulty,
        metavar="LOW,HIGH",
        help=f"re-ARC's difficulty range within [0, 1] (default {','.join(f'{x:g}' for x in REARC_DIFFICULTY)}; "
        "one number: that difficulty)",
    )
    solve = parser.add_argument_group("solver")
    solve.add_argument("--attempts", type=whole("--attempts"), default=2, help="independent attempts per task (default 2)")
    solve.add_argument("--retries", type=whole("--retries", 0), default=0, help="retries per attempt with execution feedback")
    solve.add_argument("--cot", action="store_true", help="reason step by step before writing the program")
    add(solve, "--temperature", default=0.7, help="sampling temperature of attempts (default 0.7)")
    solve.add_argument(
        "--timeout", type=number("--timeout", 0.001), default=4.0, help="seconds a program may run per grid (default 4)"
    )
    add_lm_options(parser, memory_role="memory reads and writes", sampling=False, memory_generation=True)
    add_fault_options(parser, "tasks")
    add_run_options(parser, "tasks")
    add(parser.add_argument_group("tracking"), "--mlflow")


def _names(flag: str):
    """An argparse type: comma-separated names (families)."""

    def parse(text: str) -> list[str]:
        names = [name.strip() for name in text.split(",") if name.strip()]
        if not names:
            raise argparse.ArgumentTypeError(f"{flag} needs comma-separated family names")
        return list(dict.fromkeys(names))

    return parse


def _difficulty(text: str) -> list[float]:
    """An argparse type: ``LOW,HIGH`` (or one number) within [0, 1]."""
    try:
        bounds = [float(part) for part in text.split(",")]
    except ValueError:
        bounds = []
    if len(bounds) == 1:
        bounds *= 2
    if len(bounds) != 2 or not 0 <= bounds[0] <= bounds[1] <= 1:
        raise argparse.ArgumentTypeError(f"--difficulty takes LOW,HIGH with 0 <= LOW <= HIGH <= 1, got {text!r}")
    return bounds


def _evaluate_options(parser: Parser) -> None:
    _common(parser, "val100")
    memory = parser.add_argument_group("memory")
    add(memory, "--memory")
    memory.add_argument(
        "--top-k",
        type=whole("--top-k"),
        help="most concepts selected per task (OE default 5, arcmemo_ps_exec 3; arcmemo_ps_exec_solution: most programs whose concepts are read, default 1)",
    )
    memory.add_argument(
        "--continual-every",
        type=whole("--continual-every"),
        help="update memory from verified solutions every k problems (default: frozen)",
    )
    memory.add_argument(
        "--write-gate",
        default="train",
        choices=["train", "test"],
        help="what verifies a solution for a write: train pairs (default) or test labels",
    )
    add(memory, "--modality", help="OE captions from text grids or an image")
    parser.add_argument(
        "--one-prefill",
        action="store_true",
        help="draw a task's first programs from one LM call with n = --attempts: the embedded model "
        "evaluates the shared prompt once per task instead of once per attempt",
    )
    parser.add_argument(
        "--answer",
        default="code",
        choices=["code", "fields"],
        help="how the solver's programs come back: code, a fenced code block as code models write it (default); "
        "fields, the LM's structured format (a JSON string under the embedded model's grammar)",
    )
    retry = parser.add_argument_group("retries (with --retries R)")
    retry.add_argument(
        "--retry-mode",
        default="inline",
        choices=["inline", "passes"],
        help="inline: each attempt retries before the next task (default); passes: R passes over the "
        "unsolved tasks after a first pass, memory re-read and (with --continual-every) written "
        "during and between passes, as the paper's release runs them",
    )
    retry.add_argument(
        "--reselect",
        action="store_true",
        help="a retry re-selects concepts with the previous program and its feedback in view (arcmemo_oe, arcmemo_ps)",
    )
    retry.add_argument(
        "--reselect-k", type=whole("--reselect-k"), help="most concepts a re-selection adds (default: --top-k, else 5)"
    )
    add(parser, "--runs")
    add(parser, "--out", help="run directory (default: runs/<program>-<split>-<time>); continued when it holds this run")
    add(parser, "--resume")
    add(parser, "--retry-failed", help="when continuing a run, solve its failed tasks again")
    tuned = parser.add_argument_group("tuned programs (python -m optimize)")
    add(
        tuned,
        "--config",
        help="the program's knobs from a JSON file's \"knobs\" (best.json, compile's config.json); "
        "they replace --attempts, --retries, --top-k, ...",
    )
    add(tuned, "--program-state")


def _build_options(parser: Parser) -> None:
    parser.add_argument("--format", required=True, choices=["ps", "oe", "cheatsheet"])
    add(parser, "--out", type=out_file("--out"), required=True, metavar="FILE", help="the memory file to write")
    parser.add_argument(
        "--solutions",
        type=text("--solutions"),
        metavar="DIR|rearc|NAME",
        help="skip solving: a directory of <task_id>.py or <concept>.py files defining transform, "
        "'rearc' for re-ARC's verifier programs (reasoning-gym), or a shipped folder's name "
        "(seed_solutions, arc1d_solutions)",
    )
    parser.add_argument("--unverified", action="store_true", help="also abstract solutions that fail some pair")
    parser.add_argument(
        "--apart",
        action="store_true",
        help="ps: keep each solution's concepts apart (the abstractor sees no memory and revises no concept; "
        "a title already taken gets a number)",
    )
    parser.add_argument(
        "--extend",
        action="store_true",
        help="start from the memory already in --out and skip the tasks among its sources "
        "(continues a build whose run directory is gone, or grows a memory with new tasks)",
    )
    parser.add_argument(
        "--run-dir",
        type=out_dir("--run-dir"),
        help="where the log goes (default: runs/build_memory-<format>-<split>-<time>); continued when it holds this build",
    )
    _common(parser, "barc_seeds")
    parser.set_defaults(retries=1)


def evaluate(args: argparse.Namespace, parser: Parser) -> int:
    from memreason.eval.arc.config import KNOB_FIELDS
    from memreason.eval.arc.evaluate import DEFAULTS, IDENTITY, ArcEvalOptions, arc_programs, run_arc
    from memreason.eval.arc.tables import tables
    from memreason.eval.harness.tuned import config_knobs

    if args.resume is not None:
        # a key saved runs lack (the memory role's generation settings, --answer) takes the value such runs ran with
        args = resumed_args(parser, args, IDENTITY, programs=arc_programs(), kind="an ARC evaluation", saved_defaults=DEFAULTS)
    if args.config is not None:  # its knobs named like an option replace that option: checked as the option is
        knobs = config_knobs(Path(args.config), args.program)
        checked_values(parser, {k: v for k, v in knobs.items() if k in KNOB_FIELDS}, f"--config {args.config}")
    outcome = run_arc(ArcEvalOptions.from_args(args))
    print(tables([outcome.results]))
    if outcome.report is not None:
        print(f"report: {outcome.report}")
    print(f"\nrun directory: {outcome.run_dir}")
    return 0


def build_memory(args: argparse.Namespace) -> int:
    from memreason.eval.arc.build import BuildOptions, run_build

    outcome = run_build(BuildOptions.from_args(args))
    results = outcome.results
    print(
        f"{results['written']} of {results['examples']} tasks abstracted ({results['verified']} verified); "
        f"{results['concepts']} entries in {args.out}; {results['calls']} LM calls, {results['wall_seconds']} s"
    )
    print(f"run directory: {outcome.run_dir}")
    return 0


def arc_table(args: argparse.Namespace) -> int:
    from memreason.eval.arc.attribution import compare, load_run
    from memreason.eval.tasks import task_of

    if args.common and not args.compare:
        raise UsageError("--common needs --compare")
    rows: list[dict[str, Any]] = []
    for given in args.runs:
        path = Path(given)
        path = path / "results.json" if path.is_dir() else path
        data = read_json_file(path, UsageError, "results file")
        task = task_of(data) if isinstance(data, dict) else None  # its task tables it, or it is no ARC evaluation's
        if task is None or task.paper_tables([data]) is None or (rows and task_of(rows[0]) is not task):
            raise UsageError(f"{path} is not the results of an ARC evaluation")
        rows.append(data)
    if args.compare and len(args.runs) != 2:
        raise UsageError(f"--compare takes exactly two runs, got {len(args.runs)}")
    # refused before printing
    found = compare(load_run(args.runs[0]), load_run(args.runs[1]), common=args.common) if args.compare else None
    print(task_of(rows[0]).paper_tables(rows))
    if found is not None:
        print("\n" + found.text())
    return 0
