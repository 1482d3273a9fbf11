"""``python -m eval <stream program> --task rg:NAME``: a memory program over a stream of reasoning-gym problems.

    python -m eval fewshot --task rg:puzzle24 --size 50 --seed-size 10 --batch 10 --out runs/fewshot-24
    python -m eval cheatsheet_cu --task rg:countdown --task-config '{"min_numbers": 4}' --orders 3
    python -m eval arcmemo_ps_stream --task rg:puzzle24 --answer program --learn-from check
    python -m eval --resume runs/fewshot-24

Bad input (an unknown dataset, a config it refuses, ``--learn-from check`` where there is no check) is one
line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memreason.eval.harness.errors import UsageError
from memreason.eval.stream.options import MAX_PROBES, StreamOptions
from memreason.eval.tasks import get_task
from memreason.programs.registry import PROGRAMS, STREAM, programs_for
from memreason.programs.stream.choices import ANSWER_MODES, LEARN_FROM, LESSONS

from .options import Parser, add, add_fault_options, add_lm_options, add_run_options, out_dir, whole
from .resume import resumed_args

__all__ = ["register", "stream_programs"]


def stream_programs() -> list[str]:
    """The programs registered for stream tasks."""
    return programs_for(STREAM)


def json_object(flag: str):
    """An argparse type: a JSON object (the dataset's own config), as its canonical JSON text."""

    def parse(value: str) -> str:
        try:
            found = json.loads(value)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"{flag} must be a JSON object: {exc}") from None
        if not isinstance(found, dict):
            raise argparse.ArgumentTypeError(f"{flag} must be a JSON object, got {value!r}")
        return json.dumps(found, sort_keys=True)

    return parse


def register(commands: argparse._SubParsersAction) -> None:
    table = commands.add_parser(
        "memory_table",
        help="runs of memory programs on several tasks in one table, each against its task's no-memory run",
        description="The memory-by-task table: a column a task, a row a program, each cell's gain over its column's "
        "baseline run with a paired test, and a heatmap of the gains.",
    )
    table.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="run directories (any tasks)")
    table.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="COLUMN=PROGRAM",
        help="the baseline of a column (default: the column's first run); e.g. rg:puzzle24=stream_baseline",
    )
    table.add_argument(
        "--out", type=out_dir("--out"), required=True, metavar="DIR", help="where table.json, table.md and gains.png go"
    )
    table.set_defaults(handler=run_table)
    for name in stream_programs():
        summary = PROGRAMS[name].summary.removeprefix("stream tasks: ")
        parser = commands.add_parser(
            name, help=f"evaluate {name} (--task rg:NAME): {summary}", description=f"Evaluate {name}: {summary}."
        )
        _options(parser)
        parser.set_defaults(program=name, handler=lambda args, parser=parser: run(args, parser))


def _options(parser: Parser) -> None:
    data = parser.add_argument_group("data")
    add(
        data,
        "--task",
        help="rg:NAME, any reasoning-gym dataset (python -m eval tasks --gym lists them), or et:L1-et:L3, Experience-Transfer's scenes",
    )
    data.add_argument(
        "--task-config",
        type=json_object("--task-config"),
        default="{}",
        metavar="JSON",
        help="the dataset's own config as a JSON object, e.g. '{\"min_numbers\": 4}'",
    )
    add(data, "--seed", help="test items' seed (default 0); seed problems come from another stream")
    data.add_argument(
        "--size",
        "--limit",
        dest="size",
        type=whole("--size"),
        default=50,
        metavar="N",
        help="test items, the stream's first N (default 50; at most 10,000, and at most what the task holds); "
        "--limit is the same option, as the other evaluation commands name it",
    )
    data.add_argument(
        "--seed-size",
        type=whole("--seed-size", 0),
        default=10,
        metavar="N",
        help="seed problems whose reference answers seed memory (default 10; 0: none; at most 1,000, and at most "
        "what the task holds: et:L1 has 16)",
    )
    protocol = parser.add_argument_group("stream protocol")
    protocol.add_argument(
        "--answer",
        choices=ANSWER_MODES,
        default="text",
        help="text: the answer itself; program: Python that prints it; function: solve(problem) -> str (both run in the sandbox)",
    )
    protocol.add_argument(
        "--retries",
        type=whole("--retries", 0),
        default=2,
        metavar="N",
        help="retries on feedback that needs no reference (a failed check, a failed program; default 2)",
    )
    protocol.add_argument(
        "--learn-from",
        choices=LEARN_FROM,
        default=None,
        help="what writes from the stream learn from (default: check where the task has one, else self)",
    )
    protocol.add_argument(
        "--lesson",
        choices=LESSONS,
        default="reasoning",
        help="what a write reads of an attempt: the solver's reasoning then its answer (default), or the answer alone",
    )
    protocol.add_argument(
        "--batch",
        type=whole("--batch", 0),
        default=10,
        metavar="N",
        help="items between memory updates (default 10; 0: memory frozen after the seed problems)",
    )
    protocol.add_argument(
        "--order-seed",
        type=whole("--order-seed", 0),
        default=0,
        metavar="S",
        help="the stream's order (default 0); order k of --orders is S + k",
    )
    protocol.add_argument(
        "--orders",
        type=whole("--orders"),
        default=1,
        metavar="N",
        help="orders of the stream run (mean and spread; default 1; at most 100)",
    )
    verified = parser.add_argument_group("verified writes")
    verified.add_argument(
        "--verify",
        type=whole("--verify", 0, MAX_PROBES),
        default=0,
        metavar="N",
        help="try each change a write proposes on N problems already scored (half the most like its source, half "
        "drawn), with it and without, and keep it only when it turns more right than wrong (default 0: writes kept unchecked); needs "
        "--learn-from reference or check",
    )
    verified.add_argument(
        "--verify-margin",
        type=whole("--verify-margin", 0),
        default=1,
        metavar="M",
        help="how many more probes a change must turn right than wrong to be kept (default 1)",
    )
    verified.add_argument(
        "--candidates",
        type=whole("--candidates"),
        default=1,
        metavar="K",
        help="with --verify: the writer proposes K changes (the ones after the first sampled) and the best that "
        "passes is kept (default 1)",
    )
    verified.add_argument(
        "--memory-tokens",
        type=whole("--memory-tokens", 0),
        default=0,
        metavar="T",
        help="memory never holds more than T tokens (characters / 4): the least useful entries are retired first "
        "(default 0: no budget)",
    )
    add_lm_options(parser)
    add_fault_options(parser, "items", retry_failed=True)
    run_group = parser.add_argument_group("run")
    add(run_group, "--config")
    add(run_group, "--out", help="run directory (default: runs/<program>-rg-<name>-<time>); continued when it holds this run")
    add(run_group, "--resume")
    add_run_options(parser, "items")
    add(parser.add_argument_group("tracking"), "--mlflow")


def run_table(args: argparse.Namespace) -> int:
    from memreason.eval.stream.table import TableError, markdown, memory_table, write_table

    baselines = {}
    for given in args.baseline:
        column, _, program = given.partition("=")
        if not column or not program:
            raise UsageError(f"--baseline takes COLUMN=PROGRAM, got {given!r}")
        baselines[column] = program
    try:
        table = memory_table(args.runs, baselines=baselines)
    except TableError as exc:
        raise UsageError(str(exc)) from None
    paths = write_table(table, args.out)
    print(markdown(table))
    print(f"written: {', '.join(str(p) for p in paths)}")
    return 0


def run(args: argparse.Namespace, parser: Parser) -> int:
    from memreason.eval.stream.config import DEFAULTS, IDENTITY
    from memreason.eval.stream.finished import finished_run

    if args.resume is not None:
        args = resumed_args(
            parser, args, IDENTITY, kind="an evaluation of a stream program", programs=stream_programs(), saved_defaults=DEFAULTS
        )
    if not args.task:
        raise UsageError(f"{args.program} runs on a stream task: give --task rg:NAME (e.g. --task rg:puzzle24) or et:L1-et:L3")
    finished = finished_run(StreamOptions.from_args(args))  # a finished run asked again: its saved results, at once
    if finished is not None:
        return _say(finished)
    task = get_task(args.task)
    why = task.why_not(args.program) if task.kind == STREAM else f"{task.name} is not a stream task"
    if why is not None:
        raise UsageError(f"{args.program} does not run on {task.name}: {why}")
    return _say(task.run(StreamOptions.from_args(args, task=task.name)))


def _say(outcome: Any) -> int:
    """Print a run's outcome (its directory, results and report): what every evaluation of a stream program ends with."""
    results = outcome.results
    accuracy = results["accuracy"]
    spread = f" (std {accuracy['std']:.3f} over {results['orders']} orders)" if results["orders"] > 1 else ""
    print(
        f"{results['program']} on {results['task']}: accuracy {accuracy['mean']:.3f}{spread}, "
        f"{results['examples']} items, learn_from {results['learn_from']}, "
        f"withheld entries {results['guard']['withheld_entries']}"
    )
    if outcome.report is not None:
        print(f"report: {outcome.report}")
    print(f"\nrun directory: {outcome.run_dir}")
    return 0
