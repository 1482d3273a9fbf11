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

from memreason.eval.experience_transfer.evaluate import EvaluateOptions, experience_transfer_programs, run_cell, summary_table
from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.resume import IDENTITY
from memreason.eval.inductive.evaluate import inductive_programs, run_inductive_cell
from memreason.programs import PROGRAMS

from .options import Parser, add, add_fault_options, add_lm_options, add_run_options
from .resume import resumed_args

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    for name in [*experience_transfer_programs(), *(p for p in inductive_programs() if p not in experience_transfer_programs())]:
        where = "Experience-Transfer" if name in experience_transfer_programs() else "an inductive task (--task)"
        parser = commands.add_parser(name, help=f"evaluate {name} on {where}", description=f"Evaluate {name} on {where}.")
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
    if args.resume is not None:
        args = resumed_args(
            parser,
            args,
            IDENTITY,
            kind="an Experience-Transfer run (or an inductive task's)",
            programs=[*experience_transfer_programs(), *inductive_programs()],
        )
    if args.task != "experience_transfer":
        cell = run_inductive_cell(EvaluateOptions.from_args(args))
        print(summary_table([cell.results]))
        if cell.report is not None:
            print(f"report: {cell.report}")
        print(f"\nrun directory: {cell.run_dir}")
        return 0
    if args.program not in experience_transfer_programs():
        raise UsageError(
            f"{args.program} runs on an inductive task: give --task {' or --task '.join(PROGRAMS[args.program].tasks)}"
        )
    if args.level is None:
        raise UsageError(f"{args.program} needs --level {{1,2,3}}")
    cell = run_cell(EvaluateOptions.from_args(args))
    print(summary_table([cell.results]))
    if cell.report is not None:
        print(f"report: {cell.report}")
    print(f"\nrun directory: {cell.run_dir}")
    return 0
