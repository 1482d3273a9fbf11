"""The solver of every stream program: a text answer, or a program whose printed output is the answer, with
retries on feedback that needs no reference answer.

    solver = StreamSolver("program", retries=2)
    out = solver(memory="...", problem="Make 24 using 1, 3, 5, 9 ...", check=lambda answer: Check(...))
    out.answer, out.solution, out.attempts        # the final answer, the text (or program) behind it, each try
    out.reasoning                                 # the reasoning given before that solution ("" without cot)

Algorithm (``answer`` is ``"text"`` or ``"program"``):

    y <- Solve(memory, problem)                           # an answer, or a program
    for r in 1..retries:
        a <- y (text) | the last line y prints in the sandbox (program)
        feedback <- the program's failure | check(a) when it fails | none
        if no feedback: stop
        y <- Retry(memory, problem, y, feedback)

``check`` is the task's reference-free check of an answer (an expression's value and the numbers it uses),
or None; without one, a text answer is never retried, and a program only when it fails to run.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping

import dspy

from memreason.signatures.stream import FunctionWithMemory, ProgramWithMemory, RetryWithFeedback, SolveWithMemory

from .choices import ANSWER_MODES  # re-exported: what the solver writes
from .print_runner import PrintRunner

__all__ = ["ANSWER_MODES", "StreamSolver"]

SIGNATURES = {"text": SolveWithMemory, "program": ProgramWithMemory, "function": FunctionWithMemory}
EMPTY = "(empty)"


class StreamSolver(dspy.Module):
    """Answer a text problem with memory in context, directly or by a program run in the sandbox."""

    #: The solve signature of each answer mode, and the retry's (a subclass may ask with its own).
    signatures: ClassVar[Mapping[str, type[dspy.Signature]]] = SIGNATURES
    retry_signature: ClassVar[type[dspy.Signature]] = RetryWithFeedback

    def __init__(
        self,
        answer: str = "text",
        *,
        retries: int = 2,
        cot: bool = True,
        memory_first: bool = True,
        runner: PrintRunner | None = None,
    ):
        """
        Args:
            answer: ``"text"`` (the LM gives the answer), ``"program"`` (the LM writes Python printing it) or
                ``"function"`` (it writes ``solve(problem) -> str``, run on the problem's text: a program that
                may be stored and run on later problems).
            retries: the most retries after feedback (a failed check, a program that failed to run).
            cot: reason step by step before answering (``dspy.ChainOfThought``).
            memory_first: memory before the problem in the prompt (a server's prefix cache then reuses it); False
                puts the problem first, for the prefix-reuse benchmark (``python -m memreason.eval.bench prefix_memory``).
            runner: runs programs (default: :class:`PrintRunner` on the shared sandbox).
        """
        super().__init__()
        if answer not in ANSWER_MODES:
            raise ValueError(f"answer must be one of {', '.join(ANSWER_MODES)}, got {answer!r}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.answer_mode, self.retries = answer, retries
        self.memory_first = memory_first
        make = dspy.ChainOfThought if cot else dspy.Predict
        self.solve = make(_ordered(self.signatures[answer], memory_first))
        self.retry = make(_ordered(self.retry_signature, memory_first))
        self.runner = runner

    def forward(self, memory: str, problem: str, check: Callable[[str], Any] | None = None) -> dspy.Prediction:
        memory = memory.strip() or EMPTY
        out = self.solve(memory=memory, problem=problem)
        text = str(out.answer if self.answer_mode == "text" else out.program)
        reasoning = self.reasoning_of(out)
        attempts: list[dict[str, Any]] = []
        while True:
            answer, feedback, passed = self._judge(text, problem, check)
            attempts.append({"solution": text, "reasoning": reasoning, "answer": answer, "feedback": feedback, "checked": passed})
            if feedback is None or len(attempts) > self.retries:
                break
            # each retry its own rollout: a retry whose prompt repeats the last one's is a new call, not the cache's
            rollout = {"rollout_id": len(attempts)}
            out = self.retry(memory=memory, problem=problem, previous=text, feedback=feedback, config=rollout)
            text, reasoning = str(out.answer), self.reasoning_of(out)
        final = attempts[-1]
        return dspy.Prediction(
            answer=final["answer"],
            solution=final["solution"],
            reasoning=final["reasoning"],
            attempts=attempts,
            checked=final["checked"],
        )

    def reasoning_of(self, out: dspy.Prediction) -> str:
        """What an attempt's record keeps of how it was reached: the reasoning it gave ("" for a plain Predict)."""
        return _reasoning(out)

    def _judge(self, text: str, problem: str, check: Callable[[str], Any] | None) -> tuple[str | None, str | None, bool | None]:
        """(the answer, the feedback for a retry or None, whether the check passed: None without a check)."""
        answer, feedback = text.strip(), None
        if self.answer_mode != "text":
            code = _code(text) if self.answer_mode == "program" else applied(_code(text), problem)
            printed = self._runner().run(code)
            answer = printed.answer
            if answer is None:
                return None, printed.feedback(), False if check is not None else None
        if check is None:
            return answer, feedback, None
        verdict = check(answer)
        return answer, None if verdict.ok else f"{answer!r} fails the check: {verdict.feedback}", verdict.ok

    def _runner(self) -> PrintRunner:
        if self.runner is None:
            self.runner = PrintRunner()
        return self.runner


def applied(function: str, problem: str) -> str:
    """A ``solve(problem)`` program made to print its answer to ``problem``."""
    return f"{function}\n\nprint(solve({problem!r}))\n"


def _ordered(signature: type[dspy.Signature], memory_first: bool) -> type[dspy.Signature]:
    """``signature`` as it is (memory first), or with ``memory`` moved after ``problem``."""
    if memory_first:
        return signature
    names = list(signature.input_fields)
    field = signature.input_fields["memory"]
    return signature.delete("memory").insert(names.index("problem"), "memory", field, str)


def _reasoning(out: dspy.Prediction) -> str:
    """The reasoning a ChainOfThought prediction gave ("" for a plain Predict)."""
    return str(out.get("reasoning") or "").strip()


def _code(text: str) -> str:
    """The code of an answer that may hold it in a Markdown block."""
    if "```" not in text:
        return text
    body = text.split("```", 2)[1]
    return body.split("\n", 1)[1] if "\n" in body and body.split("\n", 1)[0].strip().isalpha() else body
