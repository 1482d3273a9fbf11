"""Memory as a DSPy parameter: saved and loaded with whatever program holds it.

DSPy's ``program.save(path)`` writes the state of every parameter the program holds
(``named_parameters()``: its predictors, however deeply nested, and these), and
``program.load(path)`` puts it back. A memory store that subclasses
:class:`MemoryParameter` rides along as JSON, in a library program or in a user's own
pipeline. Memory is data, not something an optimizer learns: ``reset()`` (which
optimizers call on the copy they compile) keeps it, and it is not a predictor, so no
optimizer tunes it.

``load_state(None)`` keeps the memory as it is. A state saved before programs saved
their memory has no entry for it; :func:`fill_missing_memory` gives it ``None``.
"""

from __future__ import annotations

from typing import Any

from dspy.predict.parameter import Parameter

__all__ = ["MemoryParameter", "fill_missing_memory"]


class MemoryParameter(Parameter):
    """A memory store that DSPy saves, loads and copies with its program."""

    def reset(self) -> None:
        """Keep the memory: an optimizer resets parameters before compiling, and memory is not learned."""

    def dump_state(self, json_mode: bool = True) -> Any:
        raise NotImplementedError

    def load_state(self, state: Any) -> "MemoryParameter":
        raise NotImplementedError


def fill_missing_memory(module, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with ``None`` for each memory parameter of ``module`` it has no entry for (kept as it is on load)."""
    missing = [name for name, p in module.named_parameters() if isinstance(p, MemoryParameter) and name not in state]
    return {**state, **dict.fromkeys(missing)}
