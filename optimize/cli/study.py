"""``python -m optimize <program> ...``: an Optuna study over a program's knobs and demonstrations.

    python -m optimize hdr --level 1 --trials 8 --limit 30
    python -m optimize hdr --level 2 --trials 40 --objectives accuracy,tokens --param K=1:3 --param cot=true
    python -m optimize hdr --level 1 --trials 8 --limit 30 --enqueue K=2,N=3,cot=true,demos=0   # the paper's, first
    python -m optimize arcmemo_ps --split val100 --memory ps.json --trials 20 --limit 10
    python -m optimize hdr_checked --task acre --trials 8 --limit 20         # any registered task: --task
    python -m optimize fewshot --task rg:puzzle24 --trials 8 --size 20       # a stream task: k, cot, batch, verify
    python -m optimize hdr --level 1 --trials 40 --study shared --storage postgresql://u:p@host/db   # on every host

The study lives in ``runs/optimize/<program>-<study>/`` (``--out``); rerun the same command
to continue a stopped study; ``--trials`` is the study's total. The work is
:func:`memreason.optimize.tune.run_study`; how workers share a study: :mod:`memreason.optimize.study`.

Bad input (unknown program, unknown task or one the program does not run on, bad space
spec, bad storage URL, unknown LM, unknown ARC split, unreadable or mismatched memory file)
gets one line on stderr starting with "error: " and exit code 2.
"""

from __future__ import annotations

import argparse

from memreason.eval.cli.options import Parser, add_fault_options, add_lm_options, text, whole
from memreason.eval.cli.stream import json_object
from memreason.installed import install_hint
from memreason.programs import PROGRAMS
from memreason.programs.stream.choices import ANSWER_MODES, LEARN_FROM, LESSONS

from ..choices import DEMO_SOURCES, OBJECTIVES, PRUNERS, SAMPLERS
from .common import add, eval_command

__all__ = ["register"]

EXAMPLES = "examples:\n" + __doc__.split("\n\n")[1] if __doc__ else None  # None under python -OO


def register(commands: argparse._SubParsersAction) -> None:
    """A study subcommand per registered program."""
    for name, spec in PROGRAMS.items():
        parser = commands.add_parser(
            name,
            help=f"a study over {name}'s knobs and demos ({spec.summary})",
            description=f"An Optuna study over {name}'s knobs and demonstrations.",
            epilog=EXAMPLES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        options(parser)
        parser.set_defaults(program=name, handler=run, continue_hint="rerun the same command to continue the study")


def options(parser: Parser) -> None:
    """The options of a study (``--level`` is checked by the study: Experience-Transfer needs it, other tasks refuse it)."""
    task = parser.add_argument_group("task")
    add(
        task,
        "--task",
        default=None,
        help="the registered task the study runs on (default: the program's own benchmark, Experience-Transfer for "
        "programs of scenes, ARC for programs of grids; required for programs of problem tasks): any registered task, "
        "the library's or one of your own (MEMREASON_TASKS)",
    )
    et = parser.add_argument_group("Experience-Transfer data")
    add(et, "--level", help="Experience-Transfer level 1-3 (required there)")
    add(et, "--modality")
    add(et, "--rules")
    add(
        et,
        "--program-state",
        help="a DSPy state every trial's program starts from, e.g. a compiled consolidator "
        "(python -m optimize compile consolidator)",
    )
    arc = parser.add_argument_group("ARC data")
    add(arc, "--split", default=None)  # None, not val100: a study's identity (its configurations' digests) keeps None
    add(arc, "--memory", help="the concept memory file the program reads, or a shipped memory's name (frozen during the study)")
    data = parser.add_argument_group("data")
    add(
        data,
        "--seed",
        help="data seed (default 0); demos come from seed + 1000; on a stream task, the seed of the items you report "
        "on, which the study never tunes on",
    )
    add(data, "--limit", help="evaluate each configuration on the first N examples")
    stream_options(parser)

    study = parser.add_argument_group("study")
    study.add_argument(
        "--trials", type=whole("--trials", 1), default=20, help="trials in the study, all workers together (default 20)"
    )
    study.add_argument(
        "--study",
        type=text("--study"),
        help="study name (default L<level>, the split, or the task); the directory is runs/optimize/<program>-<study>",
    )
    study.add_argument(
        "--storage", type=text("--storage"), help="Optuna RDB URL shared by workers (default: sqlite in the study directory)"
    )
    add(study, "--out", help="study directory (default runs/optimize/<program>-<study>)")
    study.add_argument(
        "--objectives",
        default="accuracy",
        choices=OBJECTIVES,
        metavar="accuracy|accuracy,tokens",
        help="accuracy (maximize), or accuracy,tokens (also minimize tokens: a Pareto front, no pruning)",
    )
    study.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="override one dimension: K=1:3 (range), cot=true,false (choices), demos=0 (fixed)",
    )
    study.add_argument(
        "--space", type=text("--space"), metavar="SPACE.json", help="a JSON file of NAME: SPEC overriding the declared space"
    )
    study.add_argument(
        "--enqueue",
        action="append",
        default=[],
        metavar="K=2,N=3,...",
        help="a configuration to try first (e.g. the paper's), all the space's parameters given",
    )
    study.add_argument(
        "--sampler", default="tpe", choices=SAMPLERS, help="the Optuna sampler (default tpe; grid tries every point)"
    )
    study.add_argument(
        "--sampler-seed",
        type=whole("--sampler-seed", 0, 2**32 - 1),
        help="seed the sampler (leave out when several workers share a study)",
    )
    study.add_argument(
        "--pruner",
        default="median",
        choices=PRUNERS,
        help="median (default) or none; single-objective studies only: Optuna does not prune multi-objective ones",
    )
    study.add_argument(
        "--chunks",
        type=whole("--chunks", 1),
        default=3,
        help="examples are answered in this many growing chunks, accuracy reported to the pruner after each (default 3)",
    )
    study.add_argument("--demo-source", default="labeled", choices=DEMO_SOURCES, help="how demos are made (default labeled)")
    study.add_argument(
        "--train-size", type=whole("--train-size", 1), default=40, help="training examples demos are drawn from (default 40)"
    )
    study.add_argument("--n-jobs", type=whole("--n-jobs", 1), default=1, help="trials run at once in this process (threads)")
    add(study, "--threads", help="examples answered in parallel within a trial")
    study.add_argument(
        "--heartbeat",
        type=whole("--heartbeat", 1),
        default=60,
        help="seconds between a running trial's heartbeats; a trial silent for twice this is failed and retried",
    )
    add_lm_options(parser, cache_home="<out>")
    add_fault_options(parser, "examples", budget=False)
    add(
        parser.add_argument_group("tracking"),
        "--mlflow",
        help="track the study in MLflow: one run for the study, a nested run per trial, a trace per DSPy call (bare: a "
        "SQLite mlflow.db in the study directory's parent, runs/optimize/ by default; or a tracking URI such as "
        f"http://host:5000, or a .db path); needs {install_hint('mlflow')}",
    )


def stream_options(parser: Parser) -> None:
    """A stream task's options (``python -m eval``'s, there with these defaults); None when not given, so a study on
    a task of another kind refuses them."""
    stream = parser.add_argument_group(
        "stream task data (rg:NAME, et:LN)",
        "Each trial is python -m eval PROGRAM --task T with these options. Trials answer items of another stream "
        "than --seed's (the items you report on), none of its first --report-size.",
    )
    stream.add_argument(
        "--size",
        type=whole("--size"),
        metavar="N",
        help="tuning items each configuration answers (default 20; --limit says the same)",
    )
    stream.add_argument(
        "--report-size",
        type=whole("--report-size"),
        metavar="N",
        help="the items you report on: the first N of --seed's stream (default 50, python -m eval's --size), kept out of tuning",
    )
    stream.add_argument("--seed-size", type=whole("--seed-size", 0), metavar="N", help="seed problems (default 10)")
    stream.add_argument("--task-config", type=json_object("--task-config"), metavar="JSON", help="the dataset's own config")
    stream.add_argument("--answer", choices=ANSWER_MODES, help="text (default), program or function")
    stream.add_argument(
        "--retries", type=whole("--retries", 0), metavar="N", help="retries on reference-free feedback (default 2)"
    )
    stream.add_argument(
        "--learn-from", choices=LEARN_FROM, help="what writes learn from (default: check where the task has one, else self)"
    )
    stream.add_argument("--lesson", choices=LESSONS, help="what a write reads of an attempt (default reasoning)")
    stream.add_argument("--order-seed", type=whole("--order-seed", 0), metavar="S", help="the stream's order (default 0)")
    stream.add_argument("--orders", type=whole("--orders"), metavar="N", help="orders of the stream each trial runs (default 1)")


def run(args: argparse.Namespace) -> int:
    from ..tune import StudyOptions, run_study  # Optuna, the harness and the programs with it: only once a study runs

    options = StudyOptions.from_args(args)
    outcome = run_study(options)
    print(f"this worker ran {outcome.ran} trials; memories built {outcome.memories_built}, reused {outcome.memories_reused}")
    for t in outcome.best:
        print(
            f"best: trial {t.number} {dict(t.params)} accuracy {t.user_attrs.get('accuracy'):.3f} "
            f"tokens {t.user_attrs.get('tokens')}"
        )
    for name, path in outcome.written.items():
        print(f"{name}: {path}")
    if "best" in outcome.written:
        print(
            "evaluate it: "
            + eval_command(
                options.program,
                task=options.task,
                level=options.level,
                split=options.split,
                memory=options.memory,
                config=outcome.written["best"],
                state=outcome.written.get("state"),
                more=outcome.eval_words,
            )
        )
    return 0
