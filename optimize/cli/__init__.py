"""``python -m optimize ...`` (or ``memreason-optimize ...``): one root parser, a subcommand per job.

    python -m optimize <program> --level 1 --trials 8 ...          a study            (study.py -> tune.run_study)
    python -m optimize compile <program> --optimizer gepa ...      compile a program  (compile.py -> compile.compile_program)
    python -m optimize compile consolidator --optimizer bootstrap  compile a consolidator
                                                                   (compile.py -> consolidator.compile_consolidator)

Each subcommand turns its arguments into typed options (``StudyOptions``, ``CompileOptions``,
``ConsolidatorOptions``) and calls a library function with them; nothing below this package
sees the parsed arguments. The library logs its progress (shown on stderr); the command
prints the summary. Bad input is one line on stderr starting with
``error: `` and exit code 2; a run stopped by LM faults exits 1 with its work kept; Ctrl-C 130.
"""

from __future__ import annotations

import argparse
import sys

from memreason.datasets.experience_transfer import RuleTableError
from memreason.eval.cli.lm_settings import apply_lm_settings
from memreason.eval.cli.options import Parser, UsageError, check_api_base, check_memory_api_base, log_to_stderr, run_cli
from memreason.installed import command
from memreason.programs import PROGRAMS, load_programs

from ..choices import StudyError
from ..space import SpaceError
from . import compile, study

__all__ = ["build_parser", "main"]

# The errors a user can fix besides UsageError: one line on stderr, exit code 2.
BAD_INPUT = (SpaceError, StudyError, RuleTableError)


def build_parser() -> Parser:
    """The root parser: a study subcommand per program, and ``compile`` with its own subcommands."""
    parser = Parser(
        prog=command("optimize"),  # memreason-optimize, or python -m optimize when run so; help texts follow (Parser)
        description="Optuna studies over a program's knobs and demonstrations "
        "(python -m optimize PROGRAM), and DSPy compilation "
        "(python -m optimize compile).",
        epilog="Each command has its own --help, e.g. python -m optimize hdr --help, "
        "python -m optimize compile consolidator --help.",
    )
    commands = parser.add_subparsers(title="commands", dest="command", metavar="PROGRAM | compile", required=True)
    study.register(commands)
    compile.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command (``argv`` without the program name; default: the process's arguments); returns its exit code."""
    args = _parse(sys.argv[1:] if argv is None else list(argv))
    if isinstance(args, int):
        return args
    log_to_stderr()
    return run_cli(lambda: args.handler(args), bad_input=BAD_INPUT, continue_hint=args.continue_hint)


def _parse(argv: list[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code when there is nothing to run: 0 after ``--help``, 2 on bad input."""
    parsed: list[argparse.Namespace] = []

    def parse() -> int:
        load_programs(error=UsageError)  # programs of your own (MEMREASON_PROGRAMS): a bad module is one line
        _check_program(argv)
        args = build_parser().parse_args(argv)
        if hasattr(args, "lm_args") and getattr(args, "resume", None) is None:  # preset, --lm-config, flags merged
            log_to_stderr()  # the preset in use is printed
            apply_lm_settings(args)
        check_api_base(args)
        check_memory_api_base(args)
        parsed.append(args)
        return 0

    try:
        code = run_cli(parse)
    except SystemExit as exc:  # --help (argparse's errors are UsageErrors)
        return exc.code if isinstance(exc.code, int) else 0
    return parsed[0] if parsed else code


def _check_program(argv: list[str]) -> None:
    """An unknown first word (or word after ``compile``) is an unknown program, said in one short line."""
    words, known = (argv[1:], compile.TARGETS) if argv[:1] == ["compile"] else (argv, (*PROGRAMS, "compile"))
    if words and not words[0].startswith("-") and words[0] not in known:
        raise UsageError(f"unknown program {words[0]!r}; choose from: {', '.join(PROGRAMS)}")
