"""``python -m eval report RUN_DIR [RUN_DIR ...] [--out DIR] [--compare RUN_A RUN_B]``: runs compared in one Markdown
report with plots, and paired tests (each run against the first, or the two ``--compare`` names); the runs whose
manifests differ from the first run's are named, with what differs."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

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
    parser.add_argument(
        "--compare",
        nargs=2,
        type=path("--compare"),
        metavar=("RUN_A", "RUN_B"),
        help="paired tests of these two of the runs only, A against B (default: each run against the first)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from memreason.eval.report import ReportError, manifest_notes, write_report  # matplotlib and numpy with it

    for directory in args.runs:
        if not directory.is_dir():
            raise ReportError(f"no run directory {directory}")
    out = args.out or (args.runs[0] if len(args.runs) == 1 else Path("runs") / f"report-{time.strftime('%Y%m%d-%H%M%S')}")
    compare = tuple(args.compare) if args.compare else None
    print(f"report: {write_report(args.runs, out, compare=compare)}")
    notes = manifest_notes(args.runs)
    if notes:
        print(f"manifests that differ from the first run's ({args.runs[0]}):")
        for note in notes:
            print(f"  {note}")
    return 0
