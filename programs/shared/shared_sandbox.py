"""The process-wide sandbox that programs run code in when no harness passes its own (ArcMemo's solver, ListRunner)."""

from __future__ import annotations

import threading

__all__ = ["shared_sandbox"]

_shared = None
_shared_lock = threading.Lock()


def shared_sandbox():
    """A process-wide two-worker sandbox, started on first use (harnesses pass their own)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            from memreason.sandbox import Sandbox

            _shared = Sandbox(workers=2)
        return _shared
