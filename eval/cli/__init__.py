"""The command-line layer of ``python -m eval`` (``memreason-eval`` anywhere): one root parser, one subcommand each.

    python -m eval <program> ...                      evaluate an Experience-Transfer program (evaluate.py)
    python -m eval table2|table3|table4|table5 ...    reproduce an HDR paper table (tables.py)
    python -m eval <arc program>|build_memory|arc_table ...   ARC / ArcMemo (arc.py)
    python -m eval submission|score_submission ...    ARC Prize submission files (submission.py)
    python -m eval demo                               memory side by side on the first 20 Level-1 scenes (demo.py)
    python -m eval show RUN_DIR ...                   look inside a run: memory, LM calls, answers (show.py)
    python -m eval report RUN_DIR ...                 compare runs in one report with plots (report.py)
    python -m eval tasks                              the registered tasks and their programs (tasks.py)
    python -m eval <stream program> --task rg:NAME    a memory program over a reasoning-gym stream (stream.py)
    python -m eval --resume RUN_DIR                   continue a run with its saved config

Each subcommand turns its arguments into typed options (``XOptions.from_args``) and calls one
library function; nothing below this package sees the parser's namespace.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.resume import RunDirError, read_config, resumed_program
from memreason.installed import command

from . import arc, demo, evaluate, report, show, stream, submission, tables, tasks
from .lm_settings import apply_lm_settings
from .options import Parser, check_api_base, check_memory_api_base, exit_with, log_to_stderr, run_cli

__all__ = ["build_parser", "log_to_stderr", "main", "run"]

# The errors a user can fix: one line on stderr, exit code 2. Named by module where that module is not light
# (options.loaded): a command imports none of them, nor what they import, to start.
BAD_INPUT = (
    "memreason.datasets.experience_transfer.rules:RuleTableError",
    RunDirError,
    "memreason.eval.harness.tuned:TunedError",
    "memreason.datasets.arc.tasks:ArcDataError",
    "memreason.programs.arcmemo.memory_file:MemoryFileError",
    "memreason.eval.report:ReportError",
    "memreason.plugins:PluginError",
)


def build_parser() -> Parser:
    parser = Parser(
        prog=command("eval"),  # memreason-eval, or python -m eval when run so; help texts follow (Parser)
        description="Evaluate memory-for-reasoning programs (HDR, ArcMemo), reproduce the papers' tables, look inside runs.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in (evaluate, stream, arc, submission, tables, demo, show, report, tasks):
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit code (0 done, 1 a run stopped with its work kept, 2 bad input, 130 interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    log_to_stderr()
    args = None

    def parse() -> int:
        nonlocal args
        # tasks and programs of your own (MEMREASON_TASKS, MEMREASON_PROGRAMS) are imported here: a bad one is one line
        parser = build_parser()
        saved = resumed_program(argv)  # python -m eval --resume RUN_DIR: the run's own program decides the command
        if argv and argv[0].startswith("--resume") and saved is None:
            given = argv[0].partition("=")[2] or (argv[1] if len(argv) > 1 else "")
            if not given.strip() or given.startswith("-"):
                raise UsageError(f"--resume needs a run directory: {command('eval')} --resume RUN_DIR")
            where = Path(given)
            if where.is_dir():
                read_config(where)  # raises, saying what the directory lacks
            raise RunDirError(f"--resume {where}: no such run directory")
        args = parser.parse_args([saved, *argv] if saved else argv)
        if args.command is None:
            raise UsageError(f"name a command ({command('eval')} --help lists them) or --resume RUN_DIR")
        if getattr(args, "resume", None) is None:  # a resumed run's models are in its config: checked once merged
            if hasattr(args, "lm_args"):  # a command that builds LMs: its preset, --lm-config and flags merged
                apply_lm_settings(args)
            check_api_base(args)
            check_memory_api_base(args)
        args.argv = argv
        return 0

    code = run_cli(parse, bad_input=BAD_INPUT)  # bad input: one line, exit 2
    if code or args is None:
        return code
    hint = getattr(args, "continue_hint", "rerun the same command to continue")
    return run_cli(lambda: args.handler(args), bad_input=BAD_INPUT, continue_hint=hint)


def run() -> None:
    """The ``memreason-eval`` console script."""
    exit_with(main(sys.argv[1:]))
