"""``python -m eval report RUN_DIR [RUN_DIR ...] [--out DIR]``: runs compared in one Markdown report with plots."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from memreason.eval.report import ReportError, write_report

from .options import add, path

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "report",
        help="compare runs in one Markdown report with plots",
        description="Compare runs in one Markdown report with plots.",
    )
    parser.add_argument("runs", nargs="+", type=path("RUN_DIR"), metavar="RUN_DIR")
    add(parser, "--out", help="where report.md and the PNGs go (default: the run itself, or runs/report-<time>)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    for directory in args.runs:
        if not directory.is_dir():
            raise ReportError(f"no run directory {directory}")
    out = args.out or (args.runs[0] if len(args.runs) == 1 else Path("runs") / f"report-{time.strftime('%Y%m%d-%H%M%S')}")
    print(f"report: {write_report(args.runs, out)}")
    return 0
