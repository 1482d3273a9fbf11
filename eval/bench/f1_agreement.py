"""How well each automatic hypothesis-F1 mode agrees with hand labels.

    python -m memreason.eval.bench f1_agreement [--modes parse,interpret,judge] [--lm LM] [--file FILE]

The HDR paper judged its hypotheses by hand; the F1 modes (``parse``, ``interpret``, ``judge``;
see :mod:`memreason.eval.experience_transfer.hypothesis_scoring`) stand in for that judgement.
This reads a file of hand-labelled statements (default: the tests' ``hypotheses_labelled.json``,
real hypotheses and, apart, hand-written edge cases), scores each set of statements as a run
would, and prints, per mode and per part of the file, the accuracy and Cohen's kappa of the
per-statement verdicts against the labels, and the statements they disagree on. The LM modes
need a model (``--lm``; default the embedded one); DSPy's cache is off, so every call is made.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from memreason.lm import LMConfigError, resolve_lm

from ..experience_transfer.hypothesis_scoring import F1_MODES, agreement, statement_verdicts

LABELLED = Path(__file__).resolve().parents[2] / "tests" / "data" / "hypotheses_labelled.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench f1_agreement", description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(F1_MODES), help="F1 modes, comma-separated (default: all three)")
    parser.add_argument("--lm", help="the LM of the interpret and judge modes (default: the embedded model)")
    parser.add_argument("--file", type=Path, default=LABELLED, help="hand-labelled statements (default: the tests' file)")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in F1_MODES]
    if not modes or unknown:
        print(f"error: unknown F1 mode(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(F1_MODES)}")
        return 2
    try:
        data = json.loads(args.file.read_text())
        parts = {key: data[key] for key in ("hypotheses", "edge_cases") if data.get(key)}
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        print(f"error: cannot read labelled statements from {args.file}: {exc}")
        return 2
    if not parts:
        print(f"error: {args.file} holds no 'hypotheses' or 'edge_cases'")
        return 2
    choice = None
    if set(modes) - {"parse"}:
        try:
            choice = resolve_lm(args.lm, cache=False)
        except LMConfigError as exc:
            print(f"error: {exc}")
            return 2
        print(f"LM: {args.lm or 'embedded'}")
    for mode in modes:
        for key, items in parts.items():
            started = time.perf_counter()
            try:
                predicted = statement_verdicts(items, mode, lm=choice)
            except ValueError as exc:
                print(f"error: {exc}")
                return 2
            gold = [item["label"] == "correct" for item in items]
            accuracy, kappa = agreement(predicted, gold)
            print(
                f"{mode:>9} {key:<10} {len(items):3d} statements: accuracy {accuracy:.2f}, kappa {kappa:.2f} "
                f"({time.perf_counter() - started:.0f} s)"
            )
            for item, p, g in zip(items, predicted, gold):
                if p != g:
                    print(
                        f"{'':>10} labelled {'correct' if g else 'incorrect'}, scored {'correct' if p else 'incorrect'}: {item['text']}"
                    )
    return 0
