"""A scripted responder for the stream programs: answers routed by the output field a call asks for.

Game-of-24 problems are solved by brute force when the problem's first number is odd and answered
wrongly (``1 + 1``) otherwise, so a stream has right and wrong answers, checks that pass and fail.
"""

from __future__ import annotations

import itertools
import re

from tests.helpers.scripted_answers import given, outputs


def solve24(numbers: list[int]) -> str | None:
    """An expression using each number once that is worth 24 (exactly), or None."""
    from fractions import Fraction

    def exprs(values):
        if len(values) == 1:
            yield values[0]
            return
        for i, j in itertools.permutations(range(len(values)), 2):
            rest = [values[k] for k in range(len(values)) if k not in (i, j)]
            (a, ea), (b, eb) = values[i], values[j]
            options = [(a + b, f"({ea} + {eb})"), (a - b, f"({ea} - {eb})"), (a * b, f"({ea} * {eb})")]
            if b != 0:
                options.append((a / b, f"({ea} / {eb})"))
            for option in options:
                yield from exprs([*rest, option])

    for value, text in exprs([(Fraction(n), str(n)) for n in numbers]):
        if value == 24:
            return text
    return None


def numbers_of(text: str) -> list[int]:
    found = re.search(r"Make 24 using ([\d, ]+)\.", text)
    return [int(n) for n in found.group(1).split(",")] if found else []


def answer_for(problem: str) -> str:
    numbers = numbers_of(problem)
    if numbers and numbers[0] % 2 == 1:
        return solve24(numbers) or "1 + 1"
    return "1 + 1"


SOLVER = """
import itertools
import re
from fractions import Fraction


def solve(problem):
    numbers = [int(n) for n in re.search(r"using ([\\d, ]+)\\.", problem).group(1).split(",")]

    def search(values):
        if len(values) == 1:
            return values[0][1] if values[0][0] == 24 else None
        for i, j in itertools.permutations(range(len(values)), 2):
            rest = [values[k] for k in range(len(values)) if k not in (i, j)]
            (a, x), (b, y) = values[i], values[j]
            for value, text in [(a + b, f"({x} + {y})"), (a - b, f"({x} - {y})"), (a * b, f"({x} * {y})")] + (
                [(a / b, f"({x} / {y})")] if b else []
            ):
                found = search(rest + [(value, text)])
                if found:
                    return found
        return None

    return search([(Fraction(n), str(n)) for n in numbers]) or "1 + 1"
"""


def function_for(problem: str) -> str:
    """A real solver for problems whose first number is odd; a constant (wrong elsewhere) for the others."""
    numbers = numbers_of(problem)
    if numbers and numbers[0] % 2 == 1:
        return SOLVER
    return f"def solve(problem):\n    return {answer_for(problem)!r}\n"


def respond(call):
    wanted = outputs(call)
    if "bullet_ids" in wanted:  # ACE's generator: the answer as any solver's, citing the first two bullets shown
        cited = re.findall(r"\[(e\d+)\]", str(given(call, "memory")))[:2]
        return {**answered(call, [w for w in wanted if w != "bullet_ids"][-1]), "bullet_ids": cited}
    return answered(call, wanted[-1])


def answered(call, last: str):
    """The scripted answer to a call whose last output field is ``last``."""
    wanted = outputs(call)
    if last == "answer" and "previous" in call.user_text and "[[ ## feedback ## ]]" in call.user_text:
        previous = given(call, "previous")
        if isinstance(previous, str) and "def solve" in previous:
            return {"reasoning": "fixed", "answer": function_for(given(call, "problem"))}
        if isinstance(previous, str) and previous.startswith("print("):
            return {"reasoning": "fixed", "answer": f"print({answer_for(given(call, 'problem'))!r})"}
        return {"reasoning": "fixed", "answer": answer_for(given(call, "problem"))}
    if last == "answer":
        return {"reasoning": "worked it out", "answer": answer_for(given(call, "problem"))}
    if last == "program" and "solve(problem" in call.system:
        return {"reasoning": "a solver", "program": function_for(given(call, "problem"))}
    if last == "program":
        return {"reasoning": "a program", "program": f"print({answer_for(given(call, 'problem'))!r})"}
    if last == "reflection":
        return {"reflection": "Check that every number is used once."}
    if last == "updated_cheatsheet":
        return {"updated_cheatsheet": ["Try products of two numbers near 24.", "Use each number exactly once."]}
    if last == "cheatsheet":
        return {"cheatsheet": ["Multiply the two largest numbers first."]}
    if last == "lessons":
        return {"lessons": [{"title": "use all numbers", "description": "24 puzzles", "content": "Use each number once."}]}
    if last == "correct":
        return {"correct": True}
    if last == "pseudocode":
        return {"pseudocode": "1. pair numbers 2. combine"}
    if last == "derivation":
        return {"derivation": ["Observation: four numbers", "Thought: combine to 24"]}
    if last == "concepts" and "situation" in call.system:
        return {"concepts": [{"situation": "four numbers must make 24", "suggestion": "look for 4 * 6 or 3 * 8"}]}
    if last == "concepts":
        return {
            "concepts": [
                {
                    "title": "make a factor pair",
                    "description": "reach 24 as a product",
                    "kind": "routine",
                    "relevance_cues": ["24"],
                    "implementation_notes": ["find 3*8 or 4*6"],
                }
            ]
        }
    if last == "selected":
        return {"reasoning": "it applies", "selected": ["make a factor pair"]}
    if last == "speculation":
        return {"observations": ["four numbers"], "speculation": ["products"]}
    if last == "chosen":
        return {"chosen": [1]}
    if last == "key_insight":  # ACE's reflector: every bullet used was helpful
        used = re.findall(r"\[(e\d+)\]", str(given(call, "used_bullets")))
        tags = [{"id": i, "tag": "helpful"} for i in used]
        return {"diagnosis": "the numbers were paired well", "bullet_tags": tags, "key_insight": "Use each number once."}
    if last == "operations":  # ACE's curator: one bullet, the same each time (a near-duplicate after the first)
        return {"operations": [{"op": "ADD", "section": "strategies", "content": "Use each number exactly once."}]}
    raise AssertionError(f"no scripted answer for {wanted}")


def scripted():
    """The responder for ``scripted:tests.helpers.stream_answers:scripted`` (optimize's scripted LMs)."""
    return respond
