"""``--resume RUN_DIR``: a run's saved options, with the execution options given now."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Collection, Mapping

from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.resume import RunDirError, read_config

from .options import check_api_base

__all__ = ["checked_values", "resumed_args"]


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
    (what such runs did), not today's default. Saved values are checked as the command line checks them
    (a hand-edited ``threads: 0`` is refused as ``--threads 0`` would be)."""
    run_dir = args.resume
    if not run_dir.is_dir():
        raise RunDirError(f"--resume {run_dir}: no such run directory")
    if args.out is not None and args.out.resolve() != run_dir.resolve():
        raise RunDirError("--resume continues RUN_DIR in place: leave out --out")
    saved = read_config(run_dir)
    saved = {**{k: v for k, v in (saved_defaults or {}).items() if k in keys}, **saved}
    saved = checked_values(parser, saved, str(run_dir / "config.json"))
    if saved.get("program") not in programs:
        raise RunDirError(f"{run_dir} holds a run of {saved.get('program')}, not {kind}")
    defaults = vars(parser.parse_args([]))
    given = {k: v for k, v in vars(args).items() if v != defaults.get(k)}
    clash = [k for k in keys if k in given and given[k] != saved.get(k)]
    if clash:
        flags = {action.dest: action.option_strings[0] for action in parser._actions if action.option_strings}
        named = [flags.get(k, "--" + k.replace("_", "-")) for k in clash]
        raise RunDirError(f"--resume takes the run's own config; drop {', '.join(named)}")
    merged = {**defaults, **{k: v for k, v in saved.items() if k in defaults}, **given}
    merged["lm"] = None if saved.get("lm") == "embedded" else saved.get("lm")
    merged["memory_lm"] = None if saved.get("memory_lm") in (None, saved.get("lm")) else saved.get("memory_lm")
    merged["out"], merged["resume"] = run_dir, run_dir
    merged["cache"] = Path(merged["cache"]) if merged.get("cache") else None
    if "***@" in str(merged.get("api_base") or ""):
        raise RunDirError(
            f"{run_dir} was run against a server whose address held credentials, which are never recorded: "
            "give it again with --api-base URL"
        )
    resumed = argparse.Namespace(**merged)
    check_api_base(resumed)
    return resumed


def checked_values(parser: argparse.ArgumentParser, saved: Mapping[str, Any], source: str) -> dict[str, Any]:
    """``saved`` (a run's config.json, a --config's knobs) with each value an option of ``parser`` takes run through
    that option's type and choices, as if typed on the command line (lists as comma-separated text); a value the
    command line would refuse raises :class:`UsageError` naming ``source``."""
    checked = dict(saved)
    for action in parser._actions:
        key = action.dest
        if key in ("out", "resume", "help") or saved.get(key) is None or not action.option_strings:
            continue
        value, flag = saved[key], action.option_strings[0]
        try:
            if action.nargs == 0:  # a flag: true or false
                if not isinstance(value, bool):
                    raise argparse.ArgumentTypeError(f"{flag} is a flag (true or false), got {value!r}")
            elif action.type is not None:
                if isinstance(value, (dict, bool)):
                    raise argparse.ArgumentTypeError(f"{flag} takes a value, got {value!r}")
                value = action.type(",".join(map(str, value)) if isinstance(value, list) else str(value))
            if action.choices is not None and value not in action.choices:
                raise argparse.ArgumentTypeError(f"{flag} must be one of {', '.join(map(str, action.choices))}, got {value!r}")
        except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
            raise UsageError(f"{source} holds a value the command line refuses: {exc}") from None
        checked[key] = value
    return checked
