"""Run an untrusted program that prints its answer, in the project's sandbox.

    runner = PrintRunner()                                  # the process-wide sandbox, started on first use
    ran = runner.run("print(10 * (8 - 5) - 6)")
    ran.answer       # "24": the last non-empty line it printed, or None with ``ran.failure`` and ``ran.detail``

The sandbox (:mod:`memreason.sandbox`) calls ``transform(grid)``; a printing program has none, so the
source run is the program's (with ``__name__`` set to ``"__main__"``, so a ``main()`` guard runs) followed
by a ``transform`` that returns a one-cell grid. What the program printed while its top-level code ran
is the first grid's captured stdout. Every limit is the sandbox's own: wall clock, CPU, memory,
processes, no network, no files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["PrintRunner", "Printed"]

LIMITS = {"cpu_seconds": 2, "wall_seconds": 4.0, "memory_mb": 256}
_PRELUDE = '__name__ = "__main__"\n'
_SHIM = "\n\ndef transform(grid):\n    return [[0]]\n"


@dataclass(frozen=True)
class Printed:
    """What a program printed last (its answer), or why there is none."""

    answer: str | None
    failure: str | None = None
    detail: str = ""
    stdout: str = ""

    def feedback(self) -> str:
        """The outcome in words, for a retry."""
        if self.failure:
            return f"the program failed ({self.failure}): {self.detail}".strip()
        return "the program printed nothing" if self.answer is None else f"the program printed {self.answer!r}"


class PrintRunner:
    """Runs printing programs in a sandbox (default: the process-wide one ArcMemo's solver uses)."""

    def __init__(self, sandbox: Any = None, **limits: Any):
        self._sandbox = sandbox
        self.limits = {**LIMITS, **limits}

    def run(self, source: str) -> Printed:
        from memreason.sandbox import Limits

        from ..arcmemo.arc_solver import shared_sandbox

        sandbox = self._sandbox or shared_sandbox()  # not kept: a copy of this runner uses the shared one too
        outcome = sandbox.run(_PRELUDE + source + _SHIM, [[[0]]], limits=Limits(**self.limits))[0]
        lines = [line.strip() for line in (outcome.stdout or "").splitlines() if line.strip()]
        if outcome.failure is not None:
            failure = getattr(outcome.failure, "value", outcome.failure)
            detail = re.sub(r"line (\d+)", lambda m: f"line {max(1, int(m.group(1)) - 1)}", outcome.detail)  # the prelude's line
            return Printed(None, str(failure), detail, outcome.stdout)
        if not lines:
            return Printed(None, "NO_OUTPUT", "it printed nothing", outcome.stdout)
        return Printed(lines[-1], stdout=outcome.stdout)
