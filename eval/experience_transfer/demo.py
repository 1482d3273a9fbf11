"""``python -m eval demo``: what memory does for a model, side by side, in minutes.

    python -m eval demo                                   # embedded model, first 20 Level-1 scenes
    python -m eval demo --level 2 --limit 60 --lm openai/gpt-4o-mini --threads 8

Three programs answer the same scenes, each from a different memory of the same labelled
episodes: all the raw episodes (``episodic_cot``), the hypotheses HDR consolidated from them
and checked against them (``hdr_grounded``), and the true rules (``semantic_oracle_cot``, the
ceiling a memory can reach). By default each reasoner labels every object and the count is
computed in code (``--per-object``; ``--no-per-object`` for the paper's one-number answer),
each object in a call of its own against the 3 memory entries nearest to it
(``--retrieve-k 3``; ``--retrieve-k 0`` labels all objects in one call against the whole memory).
The demo is a Table 3 run (:mod:`memreason.eval.tables`) over those rows, so its cells are
ordinary run directories, finished cells are read back, and a stopped demo continues.
It prints the table, writes ``<out>/report.md`` with its plots, and ends with the commands
that look inside each run and that run the full tables.
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from .options import Parser, run_cli, whole
from .tables import main as table_main
from .tracking import add_mlflow_option

ROWS = ("episodic_cot", "hdr_grounded", "semantic_oracle_cot")
MEMORY = {"episodic_cot": "raw episodes", "hdr_grounded": "HDR hypotheses, checked", "semantic_oracle_cot": "the true rules"}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m eval demo", description="Raw episodes, HDR's memory and the true rules, side by side.")
    parser.add_argument("demo", choices=["demo"], help=argparse.SUPPRESS)
    parser.add_argument("--level", type=int, default=1, help="Experience-Transfer level (default 1)")
    parser.add_argument("--limit", type=whole("--limit"), default=20, help="first N test scenes (default 20)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"programs to compare (default {','.join(ROWS)})")
    parser.add_argument("--per-object", action=argparse.BooleanOptionalAction, default=True,
                        help="reasoners label each object; the count is computed in code (default on)")
    parser.add_argument("--retrieve-k", type=whole("--retrieve-k", 0), default=3, metavar="K",
                        help="per-object: each object labelled against its K nearest memory entries "
                             "(default 3; 0: all objects in one call, the whole memory)")
    parser.add_argument("--lm", help="task and memory LM (default: the embedded model)")
    parser.add_argument("--api-base", help="base URL for a self-hosted OpenAI-compatible server")
    parser.add_argument("--threads", type=whole("--threads"), default=16, help="scenes answered in parallel (default 16)")
    parser.add_argument("--out", type=Path, default=Path("runs/demo"), help="where the cells and the report go (default runs/demo)")
    parser.add_argument("--no-progress", action="store_true")
    add_mlflow_option(parser, store="mlflow.db in --out's parent, runs/ by default; one run, a nested run per row")
    return parser


def main(argv: list[str]) -> int:
    def command() -> int:
        args = build_parser().parse_args(argv)
        table_argv = ["table3", "--levels", str(args.level), "--rows", args.rows, "--limit", str(args.limit),
                      "--threads", str(args.threads), "--out", str(args.out)]
        for flag, value in (("--lm", args.lm), ("--api-base", args.api_base)):
            if value:
                table_argv += [flag, value]
        if args.per_object:
            table_argv.append("--per-object")
            if args.retrieve_k:
                table_argv += ["--retrieve-k", str(args.retrieve_k)]
        if args.no_progress:
            table_argv.append("--no-progress")
        if args.mlflow is not None:
            table_argv += ["--mlflow", args.mlflow] if args.mlflow else ["--mlflow"]
        code = table_main(table_argv)
        if code != 0:
            return code
        cells = [Path(cell["cell"]) for row in json.loads((args.out / "table3.json").read_text())["rows"] for cell in row["cells"]]
        print(_epilogue(args, cells))
        return 0

    return run_cli(command)


def _epilogue(args: argparse.Namespace, cells: list[Path]) -> str:
    from .report import write_report  # matplotlib: only once there is something to plot

    report = write_report(cells, args.out)
    lines = [f"\nreport with plots: {report}", "", "each row is a run directory; look inside one (its memory, every LM call, each answer):"]
    for cell in cells:
        program = cell.name.split("-L")[0]
        lines.append(f"  python -m eval show {shlex.quote(str(cell))} --wrong      # {MEMORY.get(program, program)}")
    grounded = next((c for c in cells if c.name.startswith("hdr_grounded-")), None)
    if grounded is not None:
        lines.append(f"  python -m eval show {shlex.quote(str(grounded))} --step grounded_consolidator   # how the hypotheses were found")
    lines += ["", "the paper's tables in full (150 scenes a cell; hours on the embedded model, minutes on an API model):",
              "  python -m eval table3 --levels 1,2,3 --per-object --retrieve-k 3 --threads 16",
              "  python -m eval table5 --levels 1,2,3 --rows hdr,hdr_grounded"]
    return "\n".join(lines)
