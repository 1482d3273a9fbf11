"""``python -m eval <program> ...``: evaluate a registered program and write a run directory.

Bad input (unknown program, invalid level, unreadable rules file, unknown LM, missing
key, negative limit) gets one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from datasets.experience_transfer import LEVELS, RuleTableError
from programs import PROGRAMS

from .experience_transfer import MODALITIES, ExperienceTransferConfig, evaluate_experience_transfer
from .lm import LMConfigError, resolve_lm
from .runs import new_run_dir, write_json


class UsageError(Exception):
    """Input the user can fix; reported as one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line instead of usage + message
        raise UsageError(message)


def _positive(name: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{name} must be at least 1, got {value}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m eval", description="Evaluate a memory-for-reasoning program.")
    parser.add_argument("program", help=f"one of: {', '.join(PROGRAMS)}")
    data = parser.add_argument_group("data")
    data.add_argument("--level", type=int, help=f"Experience-Transfer level {LEVELS}")
    data.add_argument("--modality", default="text", help="text (structured descriptions) or image (rendered PNGs)")
    data.add_argument("--rules", help="a rule table as JSON (default: the HDR paper's Table 1)")
    data.add_argument("--limit", type=_positive("--limit"), help="evaluate only the first N test items")
    data.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    models = parser.add_argument_group("language models")
    models.add_argument("--lm", help="task LM: a DSPy/LiteLLM model string, or local:/path/model.gguf (default: embedded)")
    models.add_argument("--memory-lm", help="LM for memory-building modules (default: the task LM)")
    models.add_argument("--api-base", help="base URL for a self-hosted OpenAI-compatible server")
    models.add_argument("--temperature", type=float, default=0.0)
    models.add_argument("--max-tokens", type=_positive("--max-tokens"), help="generation cap per call")
    models.add_argument("--no-cache", action="store_true", help="do not reuse cached LM answers")
    run = parser.add_argument_group("run")
    run.add_argument("--runs", type=_positive("--runs"), default=1, help="repetitions (accuracy mean and std)")
    run.add_argument("--threads", type=_positive("--threads"), default=1, help="examples answered in parallel")
    run.add_argument("--out", type=Path, help="run directory (default: runs/<program>-L<level>-<time>)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return _run(args)
    except (UsageError, LMConfigError, RuleTableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    if args.program not in PROGRAMS:
        raise UsageError(f"unknown program {args.program!r}; choose from: {', '.join(PROGRAMS)}")
    spec = PROGRAMS[args.program]
    if spec.task != "experience_transfer":
        raise UsageError(f"program {args.program!r} is not available yet")
    if args.level is None:
        raise UsageError(f"{args.program} needs --level {{1,2,3}}")
    if args.level not in LEVELS:
        raise UsageError(f"--level must be 1, 2 or 3, got {args.level}")
    if args.modality not in MODALITIES:
        raise UsageError(f"--modality must be text or image, got {args.modality!r}")
    config = ExperienceTransferConfig(
        program=args.program, level=args.level, modality=args.modality, limit=args.limit,
        runs=args.runs, threads=args.threads, seed=args.seed, rules=args.rules,
    )
    data = config.load_data()  # bad rules files fail here, before any model loads

    choose = dict(api_base=args.api_base, temperature=args.temperature, max_tokens=args.max_tokens, cache=not args.no_cache)
    task = resolve_lm(args.lm, **choose)
    memory = resolve_lm(args.memory_lm, **choose) if args.memory_lm else task
    if args.modality == "image" and (task.local or memory.local):
        raise UsageError("the in-process model reads text only: use --modality text, or a vision model with --lm")

    run_dir = args.out or new_run_dir(Path("runs"), f"{args.program}-L{args.level}")
    if (run_dir / "examples.jsonl").exists():
        raise UsageError(f"{run_dir} already holds a run; choose another --out")
    run_dir.mkdir(parents=True, exist_ok=True)
    _use_cache_in(run_dir)
    write_json(run_dir / "config.json", {**vars(args), "out": str(run_dir), "lm": task.spec, "memory_lm": memory.spec})

    results = evaluate_experience_transfer(
        config, task=task, memory=memory, run_dir=run_dir, progress=not args.no_progress, data=data
    )
    write_json(run_dir / "results.json", results)
    print(summary_table([results]))
    print(f"\nrun directory: {run_dir}")
    return 0


def _use_cache_in(run_dir: Path) -> None:
    """Keep DSPy's response cache with the run, never silently in the home directory."""
    import dspy

    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(run_dir / "dspy_cache"))


def summary_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table of accuracy, errors and tokens by role, one row per result."""
    header = ["program", "level", "modality", "n", "runs", "accuracy %", "errors", "memory tokens", "task tokens", "wall s"]
    lines = []
    for r in rows:
        acc = r["accuracy"]
        mem, task = r["tokens"]["memory"], r["tokens"]["task"]
        lines.append([
            r["program"], str(r["level"]), r["modality"], str(r["examples"]), str(r["runs"]),
            f"{100 * acc['mean']:.1f} ± {100 * acc['std']:.1f}", str(sum(r["errors"].values())),
            f"{mem['prompt']:,} + {mem['completion']:,}", f"{task['prompt']:,} + {task['completion']:,}",
            f"{r['wall_seconds']:.0f}",
        ])
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    render = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    note = "(tokens: prompt + completion)"
    return "\n".join([render(header), render(["-" * w for w in widths]), *map(render, lines), note])
