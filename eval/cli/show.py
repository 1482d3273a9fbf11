"""``python -m eval show RUN_DIR``: what happened inside a run, read from its directory alone.

python -m eval show runs/hdr-L1-...                      # the memory, then one line per example
python -m eval show runs/hdr-L1-... --wrong              # every wrong example in full
python -m eval show runs/hdr-L1-... --id scene-0003      # one example in full
python -m eval show runs/hdr-L1-... --step hypothesis_generator   # that step's calls, memory build included
python -m eval show runs/arcmemo_ps-... --id 0a1d4ef5 --messages  # ... with the messages sent
"""

from __future__ import annotations

import argparse

from .options import add, path, whole

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "show",
        help="look inside a run directory: memory, LM calls, answers",
        description="Look inside a run directory: memory, calls, answers.",
    )
    parser.add_argument("run_dir", type=path("RUN_DIR"), metavar="RUN_DIR")
    parser.add_argument("--id", dest="ids", action="append", metavar="ID", help="show this example in full (repeatable)")
    parser.add_argument("--wrong", action="store_true", help="show every wrong example in full")
    parser.add_argument(
        "--step",
        help="show only the calls of this step (e.g. reasoner, hypothesis_generator); "
        "alone, the memory build's calls of that step",
    )
    parser.add_argument("--run", type=whole("--run", 0), help="only repetition R (0-based; default: all)")
    add(parser, "--limit", help="at most N examples in full")
    parser.add_argument("--messages", action="store_true", help="also print the messages each call sent")
    parser.add_argument("--width", type=whole("--width", 40), help="terminal width (default: the terminal's)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from memreason.eval.show import ShowOptions, show  # rich with it

    show(ShowOptions.from_args(args))
    return 0
