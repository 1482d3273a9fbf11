"""What running a program on one grid gave: an output grid, or a typed failure."""

from __future__ import annotations

import enum
from dataclasses import dataclass

Grid = list[list[int]]


class Failure(str, enum.Enum):
    """Why a program produced no output grid."""

    SYNTAX_ERROR = "SYNTAX_ERROR"  # the source does not compile
    NO_TRANSFORM = "NO_TRANSFORM"  # the module defines no callable `transform`
    EXCEPTION = "EXCEPTION"  # top-level code or transform raised (SystemExit, RecursionError included)
    TIMEOUT = "TIMEOUT"  # wall-clock or CPU-time limit
    MEMORY_LIMIT = "MEMORY_LIMIT"  # MemoryError under the address-space limit
    BAD_OUTPUT = "BAD_OUTPUT"  # transform returned something that is not a valid grid
    KILLED = "KILLED"  # the process died or exited without reporting (signal, os._exit, sandbox failure)


@dataclass(frozen=True)
class Outcome:
    """The result of a program on one input grid.

    Exactly one of `output` and `failure` is set. `detail` explains a failure
    (exception type and message with the program's line, the signal, the limit).
    `stdout`/`stderr` hold what the program printed while handling this grid
    (output of its top-level code goes to the first grid a process handled),
    bounded by `Limits.max_output_bytes`.
    """

    output: Grid | None
    failure: Failure | None = None
    detail: str = ""
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.failure is None
