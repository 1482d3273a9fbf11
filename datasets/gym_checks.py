"""Checks that need no reference answer: what a task can say of an answer from the problem alone.

    check = checker_for("puzzle24")            # None for a dataset with no such check
    check(metadata, "10*(8 - 5) - 6")          # Check(ok=True, feedback="...")

``puzzle24``: the expression uses exactly the four numbers, each once, and is worth 24. ``countdown``:
it uses only the given numbers, each at most once, and is worth the target. Both read the problem's
numbers (and target) from the generator's metadata, never its reference answer, and evaluate the
expression exactly (fractions) with nothing but numbers, ``+ - * /`` and parentheses.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping

__all__ = ["CHECKERS", "Check", "checker_for", "expression_value"]


@dataclass(frozen=True)
class Check:
    """What a check found: ``ok`` and, for a retry, what was wrong in words."""

    ok: bool
    feedback: str


Checker = Callable[[Mapping[str, Any], str], Check]

_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}


def expression_value(text: str) -> tuple[Fraction, list[int]]:
    """(the exact value, the numbers used in order) of an arithmetic expression; ValueError if it is not one."""
    text = text.strip().strip("`").split("=")[0].replace("×", "*").replace("÷", "/").replace("x", "*")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"{text!r} is not an arithmetic expression") from None
    used: list[int] = []

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            used.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Div) and right == 0:
                raise ValueError("it divides by zero")
            return _OPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        raise ValueError(f"{text!r} holds something other than whole numbers, + - * / and parentheses")

    return value(tree.body), used


def _numbers_check(metadata: Mapping[str, Any], answer: str, *, target: int, exactly: bool) -> Check:
    numbers = [int(n) for n in metadata.get("numbers", [])]
    try:
        found, used = expression_value(answer)
    except ValueError as exc:
        return Check(False, str(exc))
    extra = Counter(used) - Counter(numbers)
    if extra:
        return Check(False, f"it uses {sorted(extra.elements())}, which are not among the numbers {numbers} (or too often)")
    if exactly and Counter(used) != Counter(numbers):
        missing = sorted((Counter(numbers) - Counter(used)).elements())
        return Check(False, f"it leaves out {missing}: every number must be used once")
    if found != target:
        shown = str(found) if found.denominator != 1 else str(found.numerator)
        return Check(False, f"it is worth {shown}, not {target}")
    return Check(True, f"it uses the numbers as allowed and is worth {target}")


def puzzle24(metadata: Mapping[str, Any], answer: str) -> Check:
    return _numbers_check(metadata, answer, target=24, exactly=True)


def countdown(metadata: Mapping[str, Any], answer: str) -> Check:
    return _numbers_check(metadata, answer, target=int(metadata.get("target", 0)), exactly=False)


CHECKERS: dict[str, Checker] = {"puzzle24": puzzle24, "countdown": countdown}


def checker_for(name: str) -> Checker | None:
    """The reference-free check of dataset ``name``, or None where there is none."""
    return CHECKERS.get(name)
