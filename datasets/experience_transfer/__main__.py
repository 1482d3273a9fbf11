"""Write one Experience-Transfer level to disk so a person can look at it.

    python -m memreason.datasets.experience_transfer --level 2 --out DIR [--seed S] [--rules FILE]

DIR receives ``episodes/*.png``, ``test/*.png`` and ``manifest.json`` (rules, oracle
hypotheses, and every item's description, label(s) and target).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .generate import LEVELS, make_level
from .rule_sources import load_rules
from .rules import RuleTableError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memreason.datasets.experience_transfer", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--level", type=int, choices=LEVELS, required=True)
    parser.add_argument("--out", type=Path, required=True, help="directory to write images and manifest.json into")
    parser.add_argument("--seed", type=_at_least(0, "--seed"), default=0)
    parser.add_argument(
        "--rules", type=Path, help="a rule table as JSON, or a generated table's name (default: the paper's Table 1)"
    )
    parser.add_argument("--episodes-per-combination", type=_at_least(1, "--episodes-per-combination"), default=2)
    args = parser.parse_args(argv)
    try:
        rules = load_rules(args.rules)
        data = make_level(args.level, seed=args.seed, rules=rules, episodes_per_combination=args.episodes_per_combination)
    except (RuleTableError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for sub, items in (("episodes", data.episodes), ("test", data.test)):
        folder = args.out / sub
        folder.mkdir(parents=True, exist_ok=True)
        for item in items:
            item.image.save(folder / f"{item.id}.png")
    (args.out / "manifest.json").write_text(json.dumps(data.manifest(), indent=1))
    print(f"wrote {len(data.episodes)} episodes and {len(data.test)} test scenes to {args.out}")
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
