"""The checked program on List Functions: a Python ``f(xs)`` proposed by the LM, run in the sandbox on every example.

    for round in 1..N:
        f <- Propose(examples, refuted)                       # Python source defining f(xs)
        run f in the sandbox on every example's input         # ListRunner: time, memory, no network, no files
        kept when it gives every example's output; else the inputs it got wrong (or its error) go back
    y = f(query) in the sandbox                               # no function kept, or f fails on the query:
                                                              # the reasoner answers, and the answer says why

An episode's observation and label are the input and output lists as JSON text, as
:mod:`memreason.datasets.inductive.list_functions` makes them. A function that loops,
raises, or returns anything but a list of integers is refuted with the sandbox's report. A
bare lambda, or a single function under another name, is taken as ``f``; a proposal that is an
earlier one written differently (layout, comments) is a repeat and is not run again.
"""

from __future__ import annotations

import ast
import json
from typing import Any

import dspy

from memreason.lm.code_answer import code_block
from memreason.signatures import ApplyListFunction, Episode, ProposeListFunction, Refuted

from ..shared.list_runner import ListRunner
from ..shared.steps import Steps, call
from .checked_program import CheckedProgram

__all__ = ["CheckedListFunction", "defining_f"]


class CheckedListFunction(CheckedProgram):
    """List Functions: the function that reproduces every example, applied in the sandbox."""

    answer_signature = ApplyListFunction

    def __init__(self, *, runner: ListRunner | None = None, **knobs):
        """
        Args:
            runner: where functions run (default: a :class:`ListRunner` on the shared sandbox).
            **knobs: :class:`CheckedProgram`'s (``N``, ``samples``, ...) and the fallback reasoner's.
        """
        super().__init__(**knobs)
        self.propose = dspy.Predict(ProposeListFunction)
        self.runner = runner or ListRunner()

    def checked(self, episodes: list[Episode], refuted: list[Refuted], known: set[Any]) -> Steps[tuple[list, Any]]:
        out = yield call(self.propose, examples=episodes, refuted=refuted, **self.proposal_config(len(known)))
        pairs = [(json.loads(str(e.observation)), json.loads(str(e.label))) for e in episodes]
        checks = []
        for function in self.proposals(out, "function"):
            source, form = defining_f(code_block(str(function), "def f")[1])
            if form in known:
                continue
            known.add(form)
            results = self.runner.run(source, [xs for xs, _ in pairs])
            why = []
            for (xs, want), got in zip(pairs, results):
                if got.output is None:
                    why.append(f"f({xs}) failed ({got.failure}: {got.detail}); expected {want}")
                elif got.output != want:
                    why.append(f"f({xs}) gave {got.output}; expected {want}")
            checks.append({"statement": source, "accepted": not why, "why": why, "failures": len(why), "examples": len(pairs)})
            if not why:
                return checks, source
        return checks, None

    def statement(self, kept: str) -> str:
        return f"The output list is f(input list), where:\n{kept}"

    def apply(self, kept: str, inputs: dict[str, Any]) -> tuple[list[int] | None, str]:
        xs = [int(v) for v in inputs["input_list"]]
        got = self.runner.run(kept, [xs])[0]
        if got.output is None:
            return None, f"the kept function failed on the query ({got.failure}: {got.detail[:200]}): the reasoner answered"
        return got.output, "the kept function, run in the sandbox"


def defining_f(code: str) -> tuple[str, str]:
    """(source that defines ``f``, its normal form) for one proposal.

    A proposal that is a bare lambda becomes ``f = <lambda>``; one that defines a single function
    under another name gets ``f = <name>`` after it. The normal form is the parsed program with
    layout and comments dropped (``ast.dump``), so a proposal that differs from an earlier one only
    in how it is written counts as a repeat; code that does not parse is its own normal form.
    """
    source = code.strip() + "\n"
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, source
    body = tree.body
    if len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Lambda):
        source = f"f = {source}"
    elif not any(_binds_f(node) for node in body):
        functions = [node.name for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if len(functions) == 1:
            source += f"f = {functions[0]}\n"
    return source, ast.dump(ast.parse(source))


def _binds_f(node: ast.stmt) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == "f"
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return any(isinstance(t, ast.Name) and t.id == "f" for t in targets)
