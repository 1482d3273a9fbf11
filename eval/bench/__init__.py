"""Benchmarks that print figures: ``python -m memreason.eval.bench <name>`` (names: see ``__main__``)."""

from __future__ import annotations

from typing import Any


def resolve_local(spec: str | None, **options: Any):
    """The local model a benchmark measures (``spec`` None: the embedded one), its server started; raises
    :class:`memreason.lm.LMConfigError` for a model that is not local."""
    from memreason.lm import LMConfigError, resolve_lm

    choice = resolve_lm(spec, **options)
    if not choice.local:
        raise LMConfigError("this benchmark measures a local model (--lm local:/path, or none for the embedded one)")
    return choice
