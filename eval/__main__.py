"""``python -m eval <command> ...`` (from the repository root) or ``memreason-eval <command> ...`` (anywhere): one entry point, routed by its first word.

    python -m eval <program> ...                      evaluate a registered program (eval/cli.py)
    python -m eval table2|table3|table4|table5 ...    reproduce an HDR paper table (eval/tables.py)
    python -m eval <arc program>|build_memory|arc_table ...   ARC / ArcMemo (eval/arc_cli.py)
    python -m eval demo                               memory side by side on the first 20 Level-1 scenes (eval/demo.py)
    python -m eval show RUN_DIR ...                   look inside a run: memory, LM calls, answers (eval/show.py)
"""

import importlib
import sys

from memreason.eval.resume import resumed_program

# first word -> "module:function" taking argv (without the first word's own routing) and returning an exit code
COMMANDS = {
    "table2": "memreason.eval.tables:main",
    "table3": "memreason.eval.tables:main",
    "table4": "memreason.eval.tables:main",
    "table5": "memreason.eval.tables:main",
    "report": "memreason.eval.report:main",  # python -m eval report RUN_DIR [RUN_DIR ...] (eval/report.py)
    "demo": "memreason.eval.demo:main",  # python -m eval demo: raw episodes, HDR and the true rules side by side (eval/demo.py)
    "show": "memreason.eval.show:main",  # python -m eval show RUN_DIR [--id ID] [--wrong] [--step STEP] (eval/show.py)
    # ARC (ArcMemo): programs, memory seeding and tables
    "build_memory": "memreason.eval.arc_cli:main",
    "arc_table": "memreason.eval.arc_cli:main",
    "baseline": "memreason.eval.arc_cli:main",
    "cheatsheet": "memreason.eval.arc_cli:main",
    "arcmemo_oe": "memreason.eval.arc_cli:main",
    "arcmemo_ps": "memreason.eval.arc_cli:main",
    "arcmemo_ps_noselect": "memreason.eval.arc_cli:main",
}


def main(argv: list[str]) -> int:
    saved = resumed_program(argv)  # python -m eval --resume RUN_DIR: the run's own program decides the route
    if saved in COMMANDS:
        argv = [saved, *argv]
    target = COMMANDS.get(argv[0]) if argv else None
    module, function = (target or "memreason.eval.cli:main").split(":")
    return getattr(importlib.import_module(module), function)(argv)


def run() -> None:
    """The ``memreason-eval`` console script."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
