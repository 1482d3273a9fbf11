"""``python -m optimize compile <program>|consolidator ...``: compile with a DSPy optimizer.

    python -m optimize compile hdr --level 1 --optimizer gepa --trainset-size 20 --out runs/compiled/hdr-gepa
    python -m optimize compile hdr --level 1 --optimizer mipro --config runs/optimize/hdr-L1/best.json
    python -m optimize compile arcmemo_ps --memory ps.json --optimizer bootstrap --trainset-size 10
    python -m optimize compile consolidator --program hdr --optimizer bootstrap --train-tables 8 --val-tables 4 --level 2
    python -m optimize compile consolidator --program hdr --optimizer bootstrap --max-demos 0 --labeled-demos 1 --level 2
    python -m eval hdr --level 1 --config DIR/config.json --program-state DIR/program.json   # evaluate the result

A program's predictors: :func:`memreason.optimize.compile.compile_program`; a memory
consolidator, scored by hypothesis F1 on generated rule tables:
:func:`memreason.optimize.consolidator.compile_consolidator`.
"""

from __future__ import annotations

import argparse

from memreason.eval.cli.options import Parser, add_fault_options, add_lm_options, levels, number, whole
from memreason.programs import PROGRAMS
from memreason.programs.registry import SCENES

from ..choices import LABELLED_RULES, PROGRAMS_WITH_CONSOLIDATORS
from .common import add, eval_command

__all__ = ["TARGETS", "register"]

EXAMPLES = "examples:\n" + __doc__.split("\n\n")[1] if __doc__ else None  # None under python -OO
CONSOLIDATOR = "consolidator"
TARGETS = (*PROGRAMS, CONSOLIDATOR)  # what follows "compile"


def register(commands: argparse._SubParsersAction) -> None:
    """``compile``, with a subcommand per registered program and one for the consolidator."""
    parser = commands.add_parser(
        "compile",
        help="compile a program's predictors, or its consolidator, with a DSPy optimizer",
        description="Compile a program's predictors, or a memory consolidator, with a DSPy optimizer.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    targets = parser.add_subparsers(title="what to compile", dest="target", metavar="PROGRAM | consolidator", required=True)
    for name, spec in PROGRAMS.items():
        program = targets.add_parser(
            name,
            help=f"compile {name}'s predictors ({spec.summary})",
            description=f"Compile {name}'s predictors with a DSPy optimizer.",
            epilog=EXAMPLES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        program_options(program, needs_level=spec.kind == SCENES)
        program.set_defaults(
            program=name, handler=run_program, continue_hint="the answers so far are cached: rerun the same command"
        )
    consolidator = targets.add_parser(
        CONSOLIDATOR,
        help="compile the memory writer of hdr or hdr_grounded, scored by hypothesis F1",
        description="Compile a memory consolidator with a DSPy optimizer, scored by hypothesis F1 on generated rule tables.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    consolidator_options(consolidator)
    consolidator.set_defaults(
        handler=run_consolidator, continue_hint="the answers so far are cached in <out>/dspy_cache: rerun the same command"
    )


def program_options(parser: Parser, *, needs_level: bool) -> None:
    """The options of compiling a program of scenes (on Experience-Transfer: ``--level`` required) or of grids."""
    _optimizer_options(parser, max_demos=4, budget="training examples")
    et = parser.add_argument_group("Experience-Transfer data")
    add(et, "--level", required=needs_level)
    add(et, "--rules")
    arc = parser.add_argument_group("ARC data")
    add(arc, "--split", default=None, help="ARC evaluation split whose tasks are kept out of training (default val100)")
    add(arc, "--memory", help="the concept memory file the program reads, or a shipped memory's name (arc1d_ps, ...)")
    data = parser.add_argument_group("data")
    add(data, "--seed", help="data seed (default 0); training data comes from seed + 1000")
    add(data, "--limit", help="at most N validation examples (default: half the trainset)")
    data.add_argument("--trainset-size", type=whole("--trainset-size", 1), default=20, help="training examples (default 20)")
    add(data, "--config", help="start from a configuration's knobs (best.json of a study)")
    add(parser, "--out", help="output directory (default runs/compiled/<program>-<optimizer>-<time>)")
    add(parser, "--threads", help="optimizer threads")
    add_lm_options(parser, cache_home="<out>")
    add_fault_options(parser, "examples", budget=False)


def consolidator_options(parser: Parser) -> None:
    parser.add_argument("--program", default="hdr", choices=PROGRAMS_WITH_CONSOLIDATORS, help="whose consolidator (default hdr)")
    _optimizer_options(parser, max_demos=2, budget="training tables")
    tables = parser.add_argument_group("rule tables")
    tables.add_argument("--train-tables", type=whole("--train-tables"), default=8, help="generated training tables (default 8)")
    tables.add_argument("--val-tables", type=whole("--val-tables"), default=4, help="generated validation tables (default 4)")
    tables.add_argument(
        "--test-tables",
        type=whole("--test-tables", 0),
        default=0,
        help="generated test tables scored before and after compiling (default 0)",
    )
    tables.add_argument(
        "--paper-levels",
        type=levels("--paper-levels", allow_empty=True),
        default=[],
        metavar="1,2,3",
        help="levels of the paper's Table 1 scored before and after compiling (default none)",
    )
    add(tables, "--level", default=2, help="the Experience-Transfer level of every table (default 2)")
    add(tables, "--seed", help="table and data seed (default 0)")
    add(
        parser,
        "--program-state",
        help="start from this consolidator state (an earlier compile's program.json) instead "
        "of the hand-written one: e.g. GEPA's instructions on top of labelled demos",
    )
    labelled = parser.add_argument_group("labelled demos")
    labelled.add_argument(
        "--labeled-demos",
        type=whole("--labeled-demos", 0),
        default=0,
        metavar="N",
        help="bootstrap and MIPROv2: labelled demos per predictor, written from training tables' true rules (default 0)",
    )
    labelled.add_argument(
        "--labeled-rules",
        choices=LABELLED_RULES,
        default="general",
        help="the labelled demos' hypotheses: the table's general rules, or one specific rule per "
        "attribute combination the episodes show (default general)",
    )
    labelled.add_argument(
        "--labeled-verdicts",
        action="store_true",
        help="with --labeled-demos: the verifier's labelled demos judge specific rules, a third of them "
        "false (LabeledFewShot on the verifier alone), instead of the generator's answer all judged valid",
    )
    parser.add_argument(
        "--threshold",
        type=f1("--threshold"),
        default=0.5,
        help="bootstrap and MIPROv2: the F1 a table's memory must reach for its calls to become demos (default 0.5)",
    )
    add(parser, "--out", help="output directory (default runs/compiled/consolidator-<program>-<optimizer>-<time>)")
    add(parser, "--threads", help="optimizer threads, and tables consolidated at once when scoring before and after (default 1)")
    add_lm_options(parser, memory_role="the consolidator and the optimizer's proposals", cache_home="<out>")
    add_fault_options(parser, "tables", budget=False)


def _optimizer_options(parser: Parser, *, max_demos: int, budget: str) -> None:
    """What every compile takes: the optimizer, its budgets, the program's knobs."""
    optimizer = parser.add_argument_group("optimizer")
    add(optimizer, "--optimizer")
    add(optimizer, "--knob")
    add(optimizer, "--max-demos", default=max_demos, help=f"demos per predictor (default {max_demos})")
    add(optimizer, "--candidates")
    add(optimizer, "--budget", help=f"GEPA: metric calls (default 20 x {budget})")


def f1(name: str):
    """An argparse type: an F1 in [0, 1], with ``name`` in its error."""

    def parse(text: str) -> float:
        value = number(name)(text)
        if value > 1:
            raise argparse.ArgumentTypeError(f"{name} is an F1 in [0, 1], got {value}")
        return value

    return parse


def run_program(args: argparse.Namespace) -> int:
    from ..compile import CompileOptions, compile_program  # DSPy with it: only once a compile runs

    options = CompileOptions.from_args(args)
    outcome = compile_program(options)
    print(f"compiled {options.program} with {options.optimizer}: train score {outcome.report.get('train_score')}")
    print(f"state: {outcome.state}")
    print(
        "evaluate it: "
        + eval_command(
            options.program,
            level=options.level,
            split=options.split,
            memory=options.memory,
            config=outcome.config,
            state=outcome.state,
        )
    )
    return 0


def run_consolidator(args: argparse.Namespace) -> int:
    from ..consolidator import ConsolidatorOptions, compile_consolidator  # DSPy with it: only once a compile runs

    options = ConsolidatorOptions.from_args(args)
    outcome = compile_consolidator(options)
    print(outcome.summary)
    print(f"state: {outcome.state}")
    print("evaluate it: " + eval_command(options.program, level=options.level, config=outcome.config, state=outcome.state))
    return 0
