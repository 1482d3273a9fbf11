"""``python -m eval submission`` and ``score_submission``: ARC Prize submission files from runs, and their scores.

    python -m eval submission runs/arcmemo_ps-val100-... --out submission.json [--pick first|vote] [--run R|all]
    python -m eval score_submission submission.json --split val100 [--tasks IDS] [--limit N]
    python -m eval score_submission submission.json --like runs/arcmemo_ps-val100-...   # that run's task set

A submission file that is not JSON, names other task ids than the task set, has another number
of test inputs for a task, or holds something that is not a grid is refused with one line and
exit code 2 (:mod:`memreason.eval.arc.submission`).
"""

from __future__ import annotations

import argparse

from memreason.eval.harness.errors import UsageError

from .options import add, out_file, path

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    make = commands.add_parser(
        "submission",
        help="an ARC Prize submission file from an ARC run",
        description="Write an ARC run's predictions as an ARC Prize submission file.",
    )
    make.add_argument("run_dir", type=path("RUN_DIR"), metavar="RUN_DIR")
    make.add_argument("--out", type=out_file("--out"), required=True, metavar="FILE", help="the submission file to write")
    make.add_argument(
        "--pick",
        default="first",
        choices=["first", "vote"],
        help="first: the first two attempts' final outputs (default); vote: the two most frequent distinct predictions",
    )
    make.add_argument("--run", type=_run, default=0, metavar="R|all", help="which repetition (0-based, default 0), or all pooled")
    make.set_defaults(handler=submission)
    score = commands.add_parser(
        "score_submission",
        help="score an ARC Prize submission file against a task set",
        description="Score an ARC Prize submission file against a task set (the official metric).",
    )
    score.add_argument("file", type=path("FILE"), metavar="FILE")
    add(score, "--split", default=None, help="the task set: an ARC split or a directory of ARC JSON files (default val100)")
    add(score, "--tasks")
    add(score, "--limit", help="only the first N tasks")
    score.add_argument("--like", type=path("--like"), metavar="RUN_DIR", help="the task set of this ARC run (instead of --split)")
    score.set_defaults(handler=score_file)


def _run(text: str) -> int | None:
    if text == "all":
        return None
    if text.isdigit():
        return int(text)
    raise argparse.ArgumentTypeError(f"--run takes a repetition number (0, 1, ...) or all, got {text!r}")


def submission(args: argparse.Namespace) -> int:
    from memreason.eval.arc.submission import run_tasks, to_submission, write_submission

    found = to_submission(args.run_dir, run_tasks(args.run_dir), pick=args.pick, run=args.run)
    path = write_submission(found, args.out)
    print(f"{len(found)} tasks, {sum(len(v) for v in found.values())} test inputs written to {path}")
    return 0


def score_file(args: argparse.Namespace) -> int:
    from memreason.datasets.arc import load_split
    from memreason.eval.arc.submission import read_submission, run_tasks, score_submission

    if args.like is not None and (args.tasks or args.limit or args.split):
        raise UsageError("--like takes the run's task set: drop --split, --tasks and --limit")
    tasks = (
        run_tasks(args.like) if args.like is not None else load_split(args.split or "val100", ids=args.tasks, limit=args.limit)
    )
    found = score_submission(read_submission(args.file), tasks)
    print(f"official score {100 * found.score:.2f}% on {len(found.per_task)} tasks")
    return 0
