"""What optimize's commands share: the options more than one of them takes, declared once, and how a result is evaluated.

    add(parser, "--optimizer")                  # declared here (optimize's own) ...
    add(parser, "--threads", help="...")        # ... or in eval's OPTIONS (memreason.eval.cli.options), with overrides
    print(eval_command("hdr", level=1, config=best, state=state))

Options only one command takes are declared in that command's module.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memreason.eval.cli.options import add as add_common
from memreason.eval.cli.options import whole
from memreason.installed import command
from memreason.programs import PROGRAMS
from memreason.programs.registry import GRIDS

from ..choices import OPTIMIZERS

__all__ = ["OPTIONS", "add", "eval_command"]

# The options more than one optimize command takes and eval's OPTIONS lacks: flag -> argparse keywords.
OPTIONS: dict[str, dict[str, Any]] = {
    # compiling: a program, a consolidator
    "--optimizer": dict(
        required=True, choices=OPTIMIZERS, help="bootstrap (BootstrapFewShot), mipro (MIPROv2), gepa (GEPA) or simba (SIMBA)"
    ),
    "--knob": dict(action="append", default=[], metavar="NAME=VALUE", help="a constructor knob, e.g. K=2"),
    "--max-demos": dict(type=whole("--max-demos", 0), metavar="N", help="demos per predictor"),
    "--candidates": dict(
        type=whole("--candidates", 1),
        metavar="N",
        help="MIPROv2: instruction/demo candidates and trials instead of auto=light; SIMBA: candidates",
    ),
    "--budget": dict(type=whole("--budget", 1), metavar="N", help="GEPA: metric calls"),
}


def add(parser: argparse.ArgumentParser | argparse._ArgumentGroup, flag: str, **overrides: Any) -> argparse.Action:
    """Add the shared option ``flag`` (optimize's :data:`OPTIONS` or eval's) with this command's ``overrides``."""
    if flag in OPTIONS:
        return parser.add_argument(flag, **{**OPTIONS[flag], **overrides})
    return add_common(parser, flag, **overrides)


def eval_command(
    program: str,
    *,
    task: str | None = None,
    level: int | None = None,
    split: str | None = None,
    memory: str | None = None,
    config: Path,
    state: Path | None = None,
    more: list[str] | None = None,
) -> str:
    """The ``python -m eval`` command evaluating a tuned or compiled ``program`` on the data it was tuned on (``task``:
    the ``--task`` it was tuned on, when one was named; ``more``: its other words, e.g. a stream's run options)."""
    words = [f"--task {task}", *(more or [])] if task else list(more or [])
    if PROGRAMS[program].kind == GRIDS:
        words.append(f"--split {split or 'val100'}" + (f" --memory {memory}" if memory else ""))
    elif level is not None:
        words.append(f"--level {level}")
    words.append(f"--config {config}")
    return " ".join([f"{command('eval')} {program}", *words]) + (f" --program-state {state}" if state else "")
