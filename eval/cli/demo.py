"""``python -m eval demo``: raw episodes, HDR's checked hypotheses and the true rules, side by side.

python -m eval demo                                   # embedded model, first 20 Level-1 scenes
python -m eval demo --level 2 --limit 60 --lm openai/gpt-4o-mini --threads 8
python -m eval demo --preset hdr-paper --rpm 500                    # the HDR paper's models and settings
"""

from __future__ import annotations

import argparse
import shlex

from memreason.eval.experience_transfer.demo import ROWS, DemoOptions
from memreason.installed import command

from .options import add, add_budget_options, add_rate_options, whole

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "demo",
        help="what memory does for a model, side by side, in minutes",
        description="Raw episodes, HDR's memory and the true rules, side by side.",
    )
    add(parser, "--level", default=1, help="Experience-Transfer level (default 1)")
    add(parser, "--limit", default=20, help="first N test scenes (default 20)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"programs to compare (default {','.join(ROWS)})")
    add(
        parser,
        "--per-object",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="reasoners label each object; the count is computed in code (default on)",
    )
    add(
        parser,
        "--retrieve-k",
        type=whole("--retrieve-k", 0),
        default=3,
        help="per-object: each object labelled against its K nearest memory entries "
        "(default 3; 0: all objects in one call, the whole memory)",
    )
    models = parser.add_argument_group("language models", "the same for every row")
    add(models, "--lm", help="task LM, and memory LM unless --memory-lm (default: the embedded model)")
    add(models, "--memory-lm", help="LM for memory building (default: the task LM)")
    add(models, "--api-base")
    add(models, "--memory-api-base")
    add(models, "--temperature")
    add(models, "--max-tokens")
    add(models, "--lm-arg")
    add(models, "--memory-lm-arg")
    add(models, "--preset")
    add(models, "--lm-config")
    add(parser, "--threads", default=16, help="scenes answered in parallel (default 16)")
    add(
        parser,
        "--out",
        default=DemoOptions.__dataclass_fields__["out"].default,
        help="where the cells and the report go (default runs/demo)",
    )
    add(parser, "--no-progress")
    add_budget_options(parser, scope="the whole demo (its rows together)")
    add_rate_options(parser)
    add(
        parser,
        "--mlflow",
        help="track the demo in MLflow (bare: mlflow.db in --out's parent, runs/ by default; one run, a nested run per row)",
    )
    parser.set_defaults(handler=run, continue_hint="rerun the same command to finish the missing cells")


def run(args: argparse.Namespace) -> int:
    from memreason.eval.experience_transfer.demo import run_demo

    table, epilogue = run_demo(DemoOptions.from_args(args), command=f"{command('eval')} {shlex.join(args.argv)}")
    print(table)
    print(epilogue)
    return 0
