"""``--resume RUN_DIR``: a run's saved options, with the execution options given now."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Collection, Mapping

from memreason.eval.harness.resume import RunDirError, read_config

__all__ = ["resumed_args"]


def resumed_args(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    keys: tuple[str, ...],
    *,
    programs: Collection[str],
    kind: str,
    saved_defaults: Mapping[str, Any] | None = None,
) -> argparse.Namespace:
    """The saved config of ``--resume RUN_DIR``, with the execution options given now.

    Options in ``keys`` (what decides results) may be repeated only with their saved
    values; ``programs`` are the ones this CLI runs, ``kind`` names them in the error. A key of
    ``keys`` missing from a config saved before it existed takes its value in ``saved_defaults``
    (what such runs did), not today's default."""
    run_dir = args.resume
    if not run_dir.is_dir():
        raise RunDirError(f"--resume {run_dir}: no such run directory")
    if args.out is not None and args.out.resolve() != run_dir.resolve():
        raise RunDirError("--resume continues RUN_DIR in place: leave out --out")
    saved = read_config(run_dir)
    saved = {**{k: v for k, v in (saved_defaults or {}).items() if k in keys}, **saved}
    if saved.get("program") not in programs:
        raise RunDirError(f"{run_dir} holds a run of {saved.get('program')}, not {kind}")
    defaults = vars(parser.parse_args([]))
    given = {k: v for k, v in vars(args).items() if v != defaults.get(k)}
    clash = [k for k in keys if k in given and given[k] != saved.get(k)]
    if clash:
        raise RunDirError(f"--resume takes the run's own config; drop {', '.join('--' + k.replace('_', '-') for k in clash)}")
    merged = {**defaults, **{k: v for k, v in saved.items() if k in defaults}, **given}
    merged["lm"] = None if saved.get("lm") == "embedded" else saved.get("lm")
    merged["memory_lm"] = None if saved.get("memory_lm") in (None, saved.get("lm")) else saved.get("memory_lm")
    merged["out"], merged["resume"] = run_dir, run_dir
    merged["cache"] = Path(merged["cache"]) if merged.get("cache") else None
    return argparse.Namespace(**merged)
