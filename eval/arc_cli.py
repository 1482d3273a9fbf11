"""``python -m eval <arc program> | build_memory | arc_table ...``: ARC evaluation, memory seeding, tables.

    python -m eval arcmemo_ps --split val100 --memory ps.json [--attempts 2] [--retries 1] [--top-k 5]
                              [--continual-every 10] [--write-gate train|test] [--limit 10] [--threads 2] ...
    python -m eval build_memory --format ps --split barc_seeds --limit 20 --out ps.json [--solutions DIR]
    python -m eval arc_table runs/arcmemo_ps-val100-*/ runs/baseline-val100-*/

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

from datasets.arc import SPLITS, ArcDataError
from programs import PROGRAMS
from programs.memory_file import MemoryFileError

from .arc import ArcConfig, BuildConfig, build_memory, evaluate_arc
from .arc_tables import markdown_table
from .lm import LMConfigError, resolve_lm
from .runs import new_run_dir, write_json

ARC_PROGRAMS = [name for name, spec in PROGRAMS.items() if spec.task == "arc"]


class UsageError(Exception):
    """Input the user can fix; reported as one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        raise UsageError(message)


def _whole(name: str, minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be at least {minimum}, got {value}")
        return value

    return parse


def _task_ids(text: str) -> list[str]:
    ids = [t.strip() for t in text.split(",") if t.strip()]
    if not ids:
        raise argparse.ArgumentTypeError("--tasks needs comma-separated task ids")
    return ids


def make_sandbox(workers: int, wall_seconds: float):
    """The sandbox programs run in (tests replace this)."""
    from programs.sandbox import Limits, Sandbox

    return Sandbox(workers=workers, limits=Limits(wall_seconds=wall_seconds, cpu_seconds=max(1, int(wall_seconds))))


def _common(parser: argparse.ArgumentParser, default_split: str) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--split", default=default_split,
                      help=f"{', '.join(SPLITS)}, or a directory of ARC JSON files (default {default_split})")
    data.add_argument("--tasks", type=_task_ids, help="only these comma-separated task ids of the split")
    data.add_argument("--limit", type=_whole("--limit", 1), help="only the first N tasks")
    solve = parser.add_argument_group("solver")
    solve.add_argument("--attempts", type=_whole("--attempts", 1), default=2, help="independent attempts per task (default 2)")
    solve.add_argument("--retries", type=_whole("--retries", 0), default=0, help="retries per attempt with execution feedback")
    solve.add_argument("--cot", action="store_true", help="reason step by step before writing the program")
    solve.add_argument("--temperature", type=float, default=0.7, help="sampling temperature of attempts (default 0.7)")
    solve.add_argument("--timeout", type=float, default=4.0, help="seconds a program may run per grid (default 4)")
    models = parser.add_argument_group("language models")
    models.add_argument("--lm", help="task LM: a DSPy/LiteLLM model string, or local:/path/model.gguf (default: embedded)")
    models.add_argument("--memory-lm", help="LM for memory reads and writes (default: the task LM)")
    models.add_argument("--api-base", help="base URL for a self-hosted OpenAI-compatible server")
    models.add_argument("--max-tokens", type=_whole("--max-tokens", 1), help="generation cap per call")
    models.add_argument("--no-cache", action="store_true", help="do not reuse cached LM answers")
    run = parser.add_argument_group("run")
    run.add_argument("--threads", type=_whole("--threads", 1), default=1, help="tasks solved in parallel")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")


def eval_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m eval", description="Evaluate an ARC program (ArcMemo paper).")
    parser.add_argument("program", help=f"one of: {', '.join(ARC_PROGRAMS)}")
    _common(parser, "val100")
    memory = parser.add_argument_group("memory")
    memory.add_argument("--memory", help="memory file from build_memory (default: start empty)")
    memory.add_argument("--top-k", type=_whole("--top-k", 1), help="most concepts selected per task (OE default 5)")
    memory.add_argument("--continual-every", type=_whole("--continual-every", 1),
                        help="update memory from verified solutions every k problems (default: frozen)")
    memory.add_argument("--write-gate", default="train", choices=["train", "test"],
                        help="what verifies a solution for a write: train pairs (default) or test labels")
    memory.add_argument("--modality", default="text", choices=["text", "image"], help="OE captions from text grids or an image")
    parser.add_argument("--runs", type=_whole("--runs", 1), default=1, help="repetitions (mean and std)")
    parser.add_argument("--out", type=Path, help="run directory (default: runs/<program>-<split>-<time>)")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m eval build_memory", description="Seed a memory file from verified solutions.")
    parser.add_argument("command")
    parser.add_argument("--format", required=True, choices=["ps", "oe", "cheatsheet"])
    parser.add_argument("--out", required=True, type=Path, help="the memory file to write")
    parser.add_argument("--solutions", help="a directory of <task_id>.py files defining transform (skips solving)")
    parser.add_argument("--unverified", action="store_true", help="also abstract solutions that fail some pair")
    parser.add_argument("--run-dir", type=Path, help="where the log goes (default: runs/build_memory-<format>-<split>-<time>)")
    _common(parser, "barc_seeds")
    parser.set_defaults(retries=1)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if not argv:
            raise UsageError(f"name a program ({', '.join(ARC_PROGRAMS)}), build_memory or arc_table")
        if argv[0] == "arc_table":
            return _table(argv[1:])
        if argv[0] == "build_memory":
            return _build(build_parser().parse_args(argv))
        return _evaluate(eval_parser().parse_args(argv))
    except (UsageError, LMConfigError, ArcDataError, MemoryFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _lms(args: argparse.Namespace):
    choose = dict(api_base=args.api_base, temperature=0.0, max_tokens=args.max_tokens, cache=not args.no_cache)
    task = resolve_lm(args.lm, **choose)
    memory = resolve_lm(args.memory_lm, **choose) if args.memory_lm else task
    return task, memory


def _run_dir(path: Path | None, name: str) -> Path:
    run_dir = path or new_run_dir(Path("runs"), name)
    if (run_dir / "examples.jsonl").exists():
        raise UsageError(f"{run_dir} already holds a run; choose another --out")
    run_dir.mkdir(parents=True, exist_ok=True)
    import dspy  # keep DSPy's response cache with the run, never silently in the home directory

    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(run_dir / "dspy_cache"))
    return run_dir


def _evaluate(args: argparse.Namespace) -> int:
    if args.program not in PROGRAMS or PROGRAMS[args.program].task != "arc":
        raise UsageError(f"unknown ARC program {args.program!r}; choose from: {', '.join(ARC_PROGRAMS)}")
    config = ArcConfig(
        program=args.program, split=args.split, tasks=args.tasks, limit=args.limit, memory=args.memory,
        attempts=args.attempts, retries=args.retries, top_k=args.top_k, continual_every=args.continual_every,
        write_gate=args.write_gate, cot=args.cot, modality=args.modality, temperature=args.temperature,
        runs=args.runs, threads=args.threads,
    )
    if config.memory_format is None and (args.continual_every or args.top_k):
        raise UsageError(f"{args.program} keeps no memory: --continual-every and --top-k do not apply")
    tasks = config.load_tasks()  # bad splits, ids and files fail here, before any model loads
    try:
        memory_store = config.load_memory()
    except ValueError as exc:
        if isinstance(exc, MemoryFileError):
            raise
        raise UsageError(str(exc)) from None
    task, memory = _lms(args)
    if args.modality == "image" and memory.local:
        raise UsageError("the in-process model reads text only: use --modality text, or a vision model with --memory-lm")
    split_name = Path(args.split).name if args.split not in SPLITS else args.split
    run_dir = _run_dir(args.out, f"{args.program}-{split_name}")
    write_json(run_dir / "config.json", {**vars(args), "out": str(run_dir), "lm": task.spec, "memory_lm": memory.spec,
                                         "task_ids": [t.id for t in tasks]})
    with make_sandbox(max(1, min(args.threads, 4)), args.timeout) as sandbox:
        results = evaluate_arc(config, task=task, memory=memory, run_dir=run_dir, sandbox=sandbox,
                               progress=not args.no_progress, tasks=tasks, initial_memory=memory_store)
    write_json(run_dir / "results.json", results)
    print(markdown_table([results]))
    print(f"\nrun directory: {run_dir}")
    return 0


def _build(args: argparse.Namespace) -> int:
    config = BuildConfig(
        format=args.format, out=str(args.out), split=args.split, tasks=args.tasks, limit=args.limit,
        solutions=args.solutions, unverified=args.unverified, attempts=args.attempts, retries=args.retries,
        cot=args.cot, temperature=args.temperature, threads=args.threads,
    )
    config.load()  # bad splits, ids, solution folders fail here, before any model loads
    task, memory = _lms(args)
    split_name = Path(args.split).name if args.split not in SPLITS else args.split
    run_dir = _run_dir(args.run_dir, f"build_memory-{args.format}-{split_name}")
    write_json(run_dir / "config.json", {**vars(args), "run_dir": str(run_dir), "lm": task.spec, "memory_lm": memory.spec})
    with make_sandbox(max(1, min(args.threads, 4)), args.timeout) as sandbox:
        results = build_memory(config, task=task, memory=memory, run_dir=run_dir, sandbox=sandbox,
                               progress=not args.no_progress)
    write_json(run_dir / "results.json", results)
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
    print(markdown_table(rows))
    return 0
