"""``stream_baseline``: no memory; the solver alone (the row every memory program is compared with)."""

from __future__ import annotations

from .base import StreamProgram

__all__ = ["StreamBaseline"]


class StreamBaseline(StreamProgram):
    """The solver with an empty memory: reads nothing, writes nothing."""
