"""``python -m eval <arc program> | build_memory | arc_table ...``: ARC evaluation, memory seeding, tables.

    python -m eval arcmemo_ps --split val100 --memory ps.json [--attempts 2] [--retries 1] [--top-k 5]
                              [--continual-every 10] [--write-gate train|test] [--limit 10] [--threads 2] ...
    python -m eval arcmemo_oe --memory oe.json --retries 2 --retry-mode passes --continual-every 10 [--reselect]
    python -m eval build_memory --format ps --split barc_seeds --limit 20 --out ps.json [--solutions DIR]
    python -m eval arc_table runs/arcmemo_ps-val100-*/ runs/baseline-val100-*/
    python -m eval arcmemo_ps --resume runs/arcmemo_ps-val100-...   # continue a run with its saved config
    python -m eval arcmemo_ps --split val100 --memory ps.json --config best.json --program-state best_program.json

Rerunning into the same ``--out`` (``--run-dir`` for build_memory) with the same config
continues the run: finished tasks are kept, memory is restored from its snapshots, LM
answers come back from the run's DSPy cache (or the one ``--cache`` names). A different
config is refused (one line, exit 2). LM faults are retried with backoff (``--lm-retries``,
``--backoff``, ``--lm-timeout``: ``--retries`` and ``--timeout`` are the solver's feedback
retries and the sandbox's time limit); a task whose LM calls still fail is recorded and
scored 0; ``--max-errors N`` stops a run after more than N failed tasks (exit 1, work kept).
Every evaluation writes ``report.md`` with its plots (``--no-report`` to skip).

Bad input (unknown program or split, malformed ARC JSON, unknown task id, corrupt
memory file, memory of the wrong format, unknown LM, missing key) gets one line on
stderr starting with "error: " and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memreason.datasets.arc import SPLITS, ArcDataError
from memreason.programs import PROGRAMS, build_program
from memreason.programs.memory_file import MemoryFileError

from .arc import KNOB_FIELDS, ArcConfig, BuildConfig, build_memory, evaluate_arc
from .arc_tables import tables
from .options import (Parser, UsageError, add_fault_options, add_lm_options, add_run_options, check_out_path, number,
                      publish, resolve_lms, retry_policy, run_cli, temperature, whole)
from .resume import RunDirError, check_same_config, read_config, resumed_args
from .runs import RunConfig, new_run_dir, use_response_cache, write_json
from .tracking import add_mlflow_option, check_mlflow, tracking
from .tuned import TunedError, as_paths, config_knobs, state_digest

ARC_PROGRAMS = [name for name, spec in PROGRAMS.items() if spec.task == "arc"]

# What decides an ARC run's results (checked when a run directory is continued), with the
# defaults of configs saved before a key existed; the rest (threads, LM retries, the cache,
# the server's address) only decides how it runs.
IDENTITY = ("program", "split", "tasks", "task_ids", "limit", "memory", "attempts", "retries", "top_k", "continual_every",
            "write_gate", "cot", "modality", "temperature", "timeout", "runs", "lm", "memory_lm", "max_tokens", "knobs",
            "program_state_sha256",  # the content of --program-state (demos, instructions), not its path
            "retry_mode", "reselect", "reselect_k", "memory_temperature", "memory_max_tokens")
BUILD_IDENTITY = ("program", "format", "out", "split", "tasks", "limit", "solutions", "unverified", "attempts", "retries",
                  "cot", "temperature", "timeout", "lm", "memory_lm", "max_tokens", "memory_temperature", "memory_max_tokens")
# Before --memory-temperature and --memory-max-tokens, memory calls ran at temperature 0 with the solver's --max-tokens (None).
MEMORY_GENERATION = {"memory_temperature": 0.0, "memory_max_tokens": None}
DEFAULTS: dict[str, Any] = {"split": "val100", "attempts": 2, "retries": 0, "write_gate": "train", "cot": False,
                            "modality": "text", "temperature": 0.7, "timeout": 4.0, "runs": 1, "knobs": {},
                            "retry_mode": "inline", "reselect": False, "reselect_k": None, **MEMORY_GENERATION}


def _task_ids(text: str) -> list[str]:
    ids = [t.strip() for t in text.split(",") if t.strip()]
    if not ids:
        raise argparse.ArgumentTypeError("--tasks needs comma-separated task ids")
    return ids


def make_sandbox(workers: int, wall_seconds: float):
    """The sandbox programs run in (tests replace this)."""
    from memreason.sandbox import Limits, Sandbox

    return Sandbox(workers=workers, limits=Limits(wall_seconds=wall_seconds, cpu_seconds=max(1, int(wall_seconds))))


def _common(parser: argparse.ArgumentParser, default_split: str) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--split", default=default_split,
                      help=f"{', '.join(SPLITS)}, or a directory of ARC JSON files (default {default_split})")
    data.add_argument("--tasks", type=_task_ids, help="only these comma-separated task ids of the split")
    data.add_argument("--limit", type=whole("--limit"), help="only the first N tasks")
    solve = parser.add_argument_group("solver")
    solve.add_argument("--attempts", type=whole("--attempts"), default=2, help="independent attempts per task (default 2)")
    solve.add_argument("--retries", type=whole("--retries", 0), default=0, help="retries per attempt with execution feedback")
    solve.add_argument("--cot", action="store_true", help="reason step by step before writing the program")
    solve.add_argument("--temperature", type=temperature, default=0.7, help="sampling temperature of attempts (default 0.7)")
    solve.add_argument("--timeout", type=number("--timeout", 0.001), default=4.0,
                       help="seconds a program may run per grid (default 4)")
    add_lm_options(parser, memory_role="memory reads and writes", sampling=False, memory_generation=True)
    add_fault_options(parser, "tasks")
    add_run_options(parser, "tasks")
    add_mlflow_option(parser.add_argument_group("tracking"))


def eval_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m eval", description="Evaluate an ARC program (ArcMemo paper).")
    parser.add_argument("program", nargs="?", help=f"one of: {', '.join(ARC_PROGRAMS)}")
    _common(parser, "val100")
    memory = parser.add_argument_group("memory")
    memory.add_argument("--memory", help="memory file from build_memory (default: start empty)")
    memory.add_argument("--top-k", type=whole("--top-k"), help="most concepts selected per task (OE default 5)")
    memory.add_argument("--continual-every", type=whole("--continual-every"),
                        help="update memory from verified solutions every k problems (default: frozen)")
    memory.add_argument("--write-gate", default="train", choices=["train", "test"],
                        help="what verifies a solution for a write: train pairs (default) or test labels")
    memory.add_argument("--modality", default="text", choices=["text", "image"], help="OE captions from text grids or an image")
    retry = parser.add_argument_group("retries (with --retries R)")
    retry.add_argument("--retry-mode", default="inline", choices=["inline", "passes"],
                       help="inline: each attempt retries before the next task (default); passes: R passes over the "
                            "unsolved tasks after a first pass, memory re-read and (with --continual-every) written "
                            "during and between passes, as the paper's release runs them")
    retry.add_argument("--reselect", action="store_true",
                       help="a retry re-selects concepts with the previous program and its feedback in view "
                            "(arcmemo_oe, arcmemo_ps)")
    retry.add_argument("--reselect-k", type=whole("--reselect-k"), help="most concepts a re-selection adds (default: --top-k, else 5)")
    parser.add_argument("--runs", type=whole("--runs"), default=1, help="repetitions (mean and std)")
    parser.add_argument("--out", type=Path, help="run directory (default: runs/<program>-<split>-<time>); continued when it holds this run")
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue the run in RUN_DIR with its saved config")
    parser.add_argument("--retry-failed", action="store_true", help="when continuing a run, solve its failed tasks again")
    tuned = parser.add_argument_group("tuned programs (python -m optimize)")
    tuned.add_argument("--config", type=Path, metavar="BEST.json",
                       help="the program's knobs from a JSON file's \"knobs\" (best.json, compile's config.json); "
                            "they replace --attempts, --retries, --top-k, ...")
    tuned.add_argument("--program-state", type=Path, metavar="STATE.json",
                       help="a DSPy state file (program.save: demos, instructions) loaded into the program")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m eval build_memory", description="Seed a memory file from verified solutions.")
    parser.add_argument("command")
    parser.add_argument("--format", required=True, choices=["ps", "oe", "cheatsheet"])
    parser.add_argument("--out", required=True, type=Path, help="the memory file to write")
    parser.add_argument("--solutions", help="a directory of <task_id>.py files defining transform (skips solving)")
    parser.add_argument("--unverified", action="store_true", help="also abstract solutions that fail some pair")
    parser.add_argument("--run-dir", type=Path,
                        help="where the log goes (default: runs/build_memory-<format>-<split>-<time>); continued when it holds this build")
    _common(parser, "barc_seeds")
    parser.set_defaults(retries=1)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def command() -> int:
        if not argv:
            raise UsageError(f"name a program ({', '.join(ARC_PROGRAMS)}), build_memory or arc_table")
        if argv[0] == "arc_table":
            return _table(argv[1:])
        if argv[0] == "build_memory":
            return _build(build_parser().parse_args(argv))
        parser = eval_parser()
        args = parser.parse_args(argv)
        if args.resume is not None:
            args = resumed_args(parser, args, IDENTITY, programs=ARC_PROGRAMS, kind="an ARC evaluation")
            _saved_generation(args)
        return _evaluate(args)

    return run_cli(command, bad_input=(ArcDataError, MemoryFileError, RunDirError, TunedError))


def _saved_generation(args: argparse.Namespace) -> None:
    """A run saved before the memory role had its own generation settings continues with the old ones."""
    saved = read_config(args.resume)
    for key, old in MEMORY_GENERATION.items():
        if key not in saved:
            setattr(args, key, old)


def _check_run_dir(run_dir: Path | None, requested: dict[str, Any], keys: tuple[str, ...], flag: str) -> bool:
    """Whether ``run_dir`` holds this run already (to be continued); raises on another run's directory."""
    if run_dir is not None and (run_dir / "config.json").exists():
        check_same_config(read_config(run_dir), requested, run_dir, keys=keys, defaults=DEFAULTS)
        return True
    if run_dir is not None and (run_dir / "examples.jsonl").exists():
        raise RunDirError(f"{run_dir} holds examples but no config.json; choose another {flag}")
    return False


def _open_run_dir(path: Path | None, name: str, cache: Path | None) -> Path:
    run_dir = path or new_run_dir(Path("runs"), name)
    run_dir.mkdir(parents=True, exist_ok=True)
    use_response_cache(cache or run_dir / "dspy_cache")  # with the run (or where the user says), never in the home directory
    return run_dir


def _evaluate(args: argparse.Namespace) -> int:
    if args.program is None:
        raise UsageError(f"name a program ({', '.join(ARC_PROGRAMS)}) or --resume RUN_DIR")
    if args.program not in PROGRAMS or PROGRAMS[args.program].task != "arc":
        raise UsageError(f"unknown ARC program {args.program!r}; choose from: {', '.join(ARC_PROGRAMS)}")
    check_mlflow(args)
    check_out_path(args.out)
    knobs = _config_knobs(args)
    config = ArcConfig(
        program=args.program, split=args.split, tasks=args.tasks, limit=args.limit, memory=args.memory,
        attempts=args.attempts, retries=args.retries, top_k=args.top_k, continual_every=args.continual_every,
        write_gate=args.write_gate, cot=args.cot, modality=args.modality, temperature=args.temperature,
        retry_mode=args.retry_mode, reselect=args.reselect, reselect_k=args.reselect_k,
        runs=args.runs, threads=args.threads, knobs=knobs,
        program_state=str(args.program_state) if args.program_state else None,
    )
    if config.memory_format is None and (args.continual_every or args.top_k):
        raise UsageError(f"{args.program} keeps no memory: --continual-every and --top-k do not apply")
    if (args.reselect or args.reselect_k) and args.program not in ("arcmemo_oe", "arcmemo_ps"):
        raise UsageError(f"{args.program} does not select concepts: --reselect and --reselect-k do not apply")
    if args.reselect_k and not args.reselect:
        raise UsageError("--reselect-k needs --reselect")
    if args.retry_mode == "passes" and not args.retries:
        print("note: --retry-mode passes with --retries 0 runs only the first pass", file=sys.stderr)
    state_digest = _check_state(config, args.program_state)
    tasks = config.load_tasks()  # bad splits, ids and files fail here, before any model loads
    try:
        memory_store = config.load_memory()
    except ValueError as exc:
        if isinstance(exc, MemoryFileError):
            raise
        raise UsageError(str(exc)) from None
    task_ids = [t.id for t in tasks]
    tuned = dict(task_ids=task_ids, knobs=knobs, program_state_sha256=state_digest)
    continuing = _check_run_dir(args.out, RunConfig.of(args, config, **tuned).to_json(), IDENTITY, "--out")  # before any model loads
    task, memory = resolve_lms(args, temperature=0.0, memory_temperature=args.memory_temperature,
                               memory_max_tokens=args.memory_max_tokens)
    if args.modality == "image" and memory.local:
        raise UsageError("the local model reads text only: use --modality text, or a vision model with --memory-lm")
    split_name = Path(args.split).name if args.split not in SPLITS else args.split
    run_dir = _open_run_dir(args.out, f"{args.program}-{split_name}", args.cache)
    if continuing:
        print(f"continuing the run in {run_dir}", file=sys.stderr)
    else:
        RunConfig.of(args, config, lm=task.spec, memory_lm=memory.spec, out=str(run_dir), resume=None, **tuned).write(run_dir)
    with tracking(args, run_dir):
        with make_sandbox(max(1, min(args.threads, 4)), args.timeout) as sandbox:
            results = evaluate_arc(config, task=task, memory=memory, run_dir=run_dir, sandbox=sandbox,
                                   progress=not args.no_progress, tasks=tasks, initial_memory=memory_store,
                                   policy=retry_policy(args), max_errors=args.max_errors, retry_failed=args.retry_failed)
        publish(run_dir, results, tables([results]), report=not args.no_report)
    return 0


def _config_knobs(args: argparse.Namespace) -> dict[str, Any]:
    """Apply ``--config``'s knobs: those named like a flag (``KNOB_FIELDS``) set it; the others are returned,
    for the program's constructor."""
    as_paths(args)
    knobs = config_knobs(args.config, args.program)
    for name in KNOB_FIELDS:
        if name in knobs:
            setattr(args, name, knobs.pop(name))
    return knobs


def _check_state(config: ArcConfig, state: Path | None) -> str | None:
    """Build the program with ``config``'s knobs and load ``state`` into it: its sha256, or None without one."""
    try:
        program = build_program(config.program, **config.program_knobs(0))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{config.program} does not take these knobs {config.knobs}: {exc}") from None
    return state_digest(program, config.program, state)


def _build(args: argparse.Namespace) -> int:
    check_mlflow(args)
    config = BuildConfig(
        format=args.format, out=str(args.out), split=args.split, tasks=args.tasks, limit=args.limit,
        solutions=args.solutions, unverified=args.unverified, attempts=args.attempts, retries=args.retries,
        cot=args.cot, temperature=args.temperature, threads=args.threads,
    )
    config.load()  # bad splits, ids, solution folders fail here, before any model loads
    continuing = _check_run_dir(args.run_dir, RunConfig.of(args, config, program="build_memory").to_json(), BUILD_IDENTITY,
                                "--run-dir")
    task, memory = resolve_lms(args, temperature=0.0, memory_temperature=args.memory_temperature,
                               memory_max_tokens=args.memory_max_tokens)
    split_name = Path(args.split).name if args.split not in SPLITS else args.split
    run_dir = _open_run_dir(args.run_dir, f"build_memory-{args.format}-{split_name}", args.cache)
    if continuing:
        print(f"continuing the build in {run_dir}", file=sys.stderr)
    else:
        RunConfig.of(args, config, lm=task.spec, memory_lm=memory.spec, program="build_memory",
                     run_dir=str(run_dir)).write(run_dir)
    with tracking(args, run_dir):
        with make_sandbox(max(1, min(args.threads, 4)), args.timeout) as sandbox:
            results = build_memory(config, task=task, memory=memory, run_dir=run_dir, sandbox=sandbox,
                                   progress=not args.no_progress, policy=retry_policy(args), max_errors=args.max_errors)
        write_json(run_dir / "results.json", results)
        if not args.no_report:
            from .report import write_run_report

            write_run_report(run_dir)
    print(f"{results['written']} of {results['examples']} tasks abstracted ({results['verified']} verified); "
          f"{results['concepts']} entries in {args.out}")
    print(f"run directory: {run_dir}")
    return 0


def _table(paths: list[str]) -> int:
    if not paths:
        raise UsageError("arc_table needs run directories (or results.json files)")
    rows: list[dict[str, Any]] = []
    for text in paths:
        path = Path(text)
        path = path / "results.json" if path.is_dir() else path
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise UsageError(f"cannot read {path}: {exc}") from None
        if not isinstance(data, dict) or data.get("task") != "arc" or "oracle_at_k" not in data:
            raise UsageError(f"{path} is not the results of an ARC evaluation")
        rows.append(data)
    print(tables(rows))
    return 0
