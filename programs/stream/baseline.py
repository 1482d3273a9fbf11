"""``stream_baseline``: no memory; the solver alone (the row every memory program is compared with)."""

from __future__ import annotations

from ..registry import register_program
from .base import StreamProgram

__all__ = ["StreamBaseline"]


@register_program
class StreamBaseline(StreamProgram):
    """The solver with an empty memory: reads nothing, writes nothing."""

    name = "stream_baseline"
    summary = "stream tasks: no memory, the solver alone"
