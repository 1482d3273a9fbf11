"""``python -m eval <program> ...``: evaluate an Experience-Transfer program and write a run directory.

    python -m eval hdr --level 2 --lm openai/gpt-4o-mini --threads 8 --out runs/hdr-L2
    python -m eval hdr --level 2 --lm openai/gpt-4o-mini --out runs/hdr-L2    # same config: continues it
    python -m eval --resume runs/hdr-L2                                        # the saved config, continued

A run directory that already holds a run with the same config is continued, never
overwritten; a different config is refused. Bad input gets one line on stderr and exit code
2, never a traceback; a run stopped by ``--max-errors`` or by memory that could not be built
exits 1 with its work kept.
"""

from __future__ import annotations

import argparse

from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.options import EvaluateOptions
from memreason.eval.harness.resume import identity_keys
from memreason.eval.tasks import default_task, get_task, task_names
from memreason.programs.registry import GRIDS, STREAM

from .options import Parser, add, add_fault_options, add_lm_options, add_run_options
from .resume import resumed_args

__all__ = ["register"]


def _runs_on() -> dict[str, list[str]]:
    """The programs ``python -m eval <program>`` evaluates, each with the tasks it runs on: those of every registered
    task but ARC's grids (which have their own command, with ``--split``) and stream tasks' (:mod:`.stream`)."""
    found: dict[str, list[str]] = {}
    for name in task_names():
        task = get_task(name)
        if task.kind not in (GRIDS, STREAM):
            for program in task.programs():
                found.setdefault(program, []).append(name)
    return found


def _evaluated() -> list[str]:
    return list(_runs_on())


def register(commands: argparse._SubParsersAction) -> None:
    for name, tasks in _runs_on().items():
        where = " or ".join(tasks)
        parser = commands.add_parser(name, help=f"evaluate {name} (--task {where})", description=f"Evaluate {name} on {where}.")
        _options(parser)
        parser.set_defaults(program=name, handler=lambda args, parser=parser: run(args, parser))


def _options(parser: Parser) -> None:
    data = parser.add_argument_group("data")
    add(data, "--task")
    add(data, "--level")
    add(data, "--modality")
    add(data, "--rules")
    add(data, "--limit", help="evaluate only the first N test scenes")
    add(data, "--seed")
    add_lm_options(parser)
    add_fault_options(parser, "scenes", retry_failed=True)
    run_group = parser.add_argument_group("run")
    add(run_group, "--runs")
    add(run_group, "--config")
    add(run_group, "--per-object")
    add(run_group, "--retrieve-k")
    add(run_group, "--program-state")
    add(run_group, "--out", help="run directory (default: runs/<program>-L<level>-<time>); continued when it holds this run")
    add(run_group, "--resume")
    add_run_options(parser, "scenes")
    add(parser.add_argument_group("tracking"), "--mlflow")


def run(args: argparse.Namespace, parser: Parser) -> int:
    from memreason.eval.experience_transfer.evaluate import summary_table

    if args.resume is not None:
        args = resumed_args(
            parser,
            args,
            identity_keys(EvaluateOptions, extra=("program", "knobs", "program_state_sha256")),
            kind="an Experience-Transfer run (or a problem task's)",
            programs=_evaluated(),
        )
    task = get_task(args.task) if args.task is not None else default_task(args.program)
    if args.program not in task.programs():
        on = [t for t in task_names() if args.program in get_task(t).programs()]
        raise UsageError(f"{args.program} does not run on {task.name}: give --task {' or --task '.join(on)}")
    cell = task.run(EvaluateOptions.from_args(args, task=task.name))
    print(summary_table([cell.results]))
    if cell.report is not None:
        print(f"report: {cell.report}")
    print(f"\nrun directory: {cell.run_dir}")
    return 0
