"""Write one Experience-Transfer level to disk so a person can look at it.

    python -m memreason.datasets.experience_transfer --level 2 --out DIR [--seed S] [--rules FILE]

DIR receives ``episodes/*.png``, ``test/*.png`` and ``manifest.json`` (rules, oracle
hypotheses, and every item's description, label(s) and target).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .generate import LEVELS, make_level
from .rule_sources import load_rules
from .rules import RuleTableError


class BadInput(ValueError):
    """Input the user can fix; said in one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, whose errors are one line (:class:`BadInput`) instead of the usage block."""

    def error(self, message: str):
        raise BadInput(message)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def check_out(out: str) -> Path:
    """``--out`` as a path, or :class:`BadInput` when it is empty, a file, under a file, or cannot be written."""
    if not out:
        raise BadInput("--out must name a directory to write into")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise BadInput(f"--out {path} is not a directory; give a directory")
    existing = next(p for p in (path.absolute(), *path.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise BadInput(f"--out {path} lies under {existing}, which is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise BadInput(f"--out {path}: {existing} cannot be written; give a directory you can write")
    return path


def make_out(out: Path) -> None:
    """Create ``out``; :class:`BadInput` when it cannot be (a read-only file system, ``/proc``)."""
    try:
        (out / "episodes").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"--out {out} cannot be written: {exc.strerror or exc}; give a directory you can write") from None


def _main(argv: list[str] | None) -> int:
    parser = _Parser(prog="python -m memreason.datasets.experience_transfer", description=__doc__.split("\n\n")[0])
    parser.add_argument("--level", type=int, choices=LEVELS, required=True)
    parser.add_argument("--out", required=True, help="directory to write images and manifest.json into")
    parser.add_argument("--seed", type=_at_least(0, "--seed"), default=0)
    parser.add_argument(
        "--rules", type=Path, help="a rule table as JSON, or a generated table's name (default: the paper's Table 1)"
    )
    parser.add_argument("--episodes-per-combination", type=_at_least(1, "--episodes-per-combination"), default=2)
    args = parser.parse_args(argv)
    out = check_out(args.out)
    try:
        rules = load_rules(args.rules)
        data = make_level(args.level, seed=args.seed, rules=rules, episodes_per_combination=args.episodes_per_combination)
    except (RuleTableError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    make_out(out)
    try:
        for sub, items in (("episodes", data.episodes), ("test", data.test)):
            folder = out / sub
            folder.mkdir(parents=True, exist_ok=True)
            for item in items:
                item.image.save(folder / f"{item.id}.png")
        (out / "manifest.json").write_text(json.dumps(data.manifest(), indent=1))
    except OSError as exc:
        print(f"error: cannot write into {out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"wrote {len(data.episodes)} episodes and {len(data.test)} test scenes to {out}")
    return 0


def _at_least(least: int, flag: str):
    """An argparse type: a whole number >= ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least:
            raise argparse.ArgumentTypeError(f"{flag} must be a whole number >= {least}, got {text!r}")
        return value

    return parse


if __name__ == "__main__":
    sys.exit(main())
