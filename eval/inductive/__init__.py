"""Inductive tasks (ACRE, List Functions): each problem's own memory, the Experience-Transfer harness's loop."""

from .run import InductiveConfig, evaluate_inductive

__all__ = ["InductiveConfig", "evaluate_inductive"]
