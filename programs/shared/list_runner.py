"""Run an untrusted ``f(xs)`` (lists of integers in and out) in the project's sandbox.

    runner = ListRunner()                               # the process-wide sandbox, started on first use
    results = runner.run("def f(xs):\n    return xs[::-1]", [[1, 2], [3]])
    results[0].output    # [2, 1], or None with .failure (a sandbox failure name) and .detail

The sandbox (:mod:`memreason.sandbox`) runs ``transform(grid)`` on grids of digits. A list
goes in and comes out as a grid: its JSON text (digits, ``-``, ``,``, ``[``, ``]``), each
character as two digits, 15 characters to a row, padded with ``9, 9``. The source run is
the program's followed by a ``transform`` that decodes the grid, calls ``f`` and encodes
what it returns, refusing (``EXCEPTION``) anything but a list of integers that fits in
:data:`MAX_CHARS` characters. Every other limit is the sandbox's own: wall clock, CPU,
memory, processes, no network, no files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from .shared_sandbox import shared_sandbox

__all__ = ["MAX_CHARS", "ListOutcome", "ListRunner", "decode", "encode"]

ALPHABET = "0123456789-,[]"
WIDTH = 30  # grid columns: 15 characters a row
MAX_CHARS = 15 * 30  # the sandbox's largest grid is 30 x 30
LIMITS = {"cpu_seconds": 1, "wall_seconds": 2.0, "memory_mb": 256}

_SHIM = """

def transform(grid):
    alphabet = "0123456789-,[]"
    cells = [c for row in grid for c in row]
    text = "".join(alphabet[10 * a + b] for a, b in zip(cells[0::2], cells[1::2]) if 10 * a + b < len(alphabet))
    import json as _json
    result = f(_json.loads(text))
    if not isinstance(result, list) or not all(type(v) is int for v in result):
        raise TypeError("f must return a list of integers, got " + repr(result)[:80])
    out = _json.dumps(result, separators=(",", ":"))
    if len(out) > %d:
        raise ValueError("f returned a list too long to report (%%d characters)" %% len(out))
    digits = [d for ch in out for d in divmod(alphabet.index(ch), 10)]
    digits += [9] * (-len(digits) %% %d)
    return [digits[i:i + %d] for i in range(0, len(digits), %d)]
""" % (MAX_CHARS, WIDTH, WIDTH, WIDTH)


def encode(values: Sequence[int]) -> list[list[int]]:
    """A list of integers as a grid of digits (see the module docs)."""
    text = json.dumps([int(v) for v in values], separators=(",", ":"))
    if len(text) > MAX_CHARS:
        raise ValueError(f"a list of {len(text)} characters does not fit in a grid ({MAX_CHARS} at most)")
    digits = [d for ch in text for d in divmod(ALPHABET.index(ch), 10)]
    digits += [9] * (-len(digits) % WIDTH)
    return [digits[i : i + WIDTH] for i in range(0, len(digits), WIDTH)]


def decode(grid: Sequence[Sequence[int]]) -> list[int]:
    """The list :func:`encode` wrote into ``grid``."""
    cells = [c for row in grid for c in row]
    text = "".join(ALPHABET[10 * a + b] for a, b in zip(cells[0::2], cells[1::2]) if 10 * a + b < len(ALPHABET))
    return json.loads(text)


@dataclass(frozen=True)
class ListOutcome:
    """``f`` on one input: its output, or the sandbox's failure kind and detail."""

    output: list[int] | None
    failure: str | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"output": self.output, "failure": self.failure, "detail": self.detail}


class ListRunner:
    """Runs ``f(xs)`` in a sandbox (default: the process-wide one ArcMemo's solver uses)."""

    def __init__(self, sandbox=None, **limits: Any):
        """
        Args:
            sandbox: a :class:`memreason.sandbox.Sandbox` (default: the shared one, started on first use).
            **limits: :class:`memreason.sandbox.Limits` fields (default: 1 CPU second, 2 s wall clock, 256 MB).
        """
        self._sandbox = sandbox
        self.limits = {**LIMITS, **limits}

    def run(self, source: str, inputs: Sequence[Sequence[int]]) -> list[ListOutcome]:
        """``f`` of ``source`` on each input, in order."""
        from memreason.sandbox import Limits

        sandbox = self._sandbox or shared_sandbox()  # not kept: a copy of this runner uses the shared one too
        outcomes = sandbox.run(source + _SHIM, [encode(xs) for xs in inputs], limits=Limits(**self.limits))
        return [_outcome(o) for o in outcomes]


def _outcome(raw: Any) -> ListOutcome:
    if raw.output is not None:
        try:
            return ListOutcome(decode(raw.output))
        except (ValueError, IndexError) as exc:
            return ListOutcome(None, "BAD_OUTPUT", f"the output grid does not decode: {exc}")
    failure = getattr(raw.failure, "value", raw.failure)
    return ListOutcome(None, str(failure), raw.detail)
