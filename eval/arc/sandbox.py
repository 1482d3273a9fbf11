"""The sandbox an ARC command runs generated programs in (tests replace :func:`make_sandbox`)."""

from __future__ import annotations

__all__ = ["make_sandbox"]


def make_sandbox(workers: int, wall_seconds: float):
    """A :class:`memreason.sandbox.Sandbox` of ``workers`` processes, each program run at most ``wall_seconds`` a grid."""
    from memreason.sandbox import Limits, Sandbox

    return Sandbox(workers=workers, limits=Limits(wall_seconds=wall_seconds, cpu_seconds=max(1, int(wall_seconds))))
