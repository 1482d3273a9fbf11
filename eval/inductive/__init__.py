"""Inductive tasks (ACRE, List Functions): each problem's own memory, the Experience-Transfer harness's loop."""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy): the programs and DSPy come with them
    from .run import InductiveConfig, evaluate_inductive

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".run": "InductiveConfig evaluate_inductive",
    },
)

__all__ = ["InductiveConfig", "evaluate_inductive"]
