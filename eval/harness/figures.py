"""Figures (reports, study plots) saved whole: drawn in memory first, then put in place as :mod:`memreason.files` does."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from memreason.files import replace_atomically

__all__ = ["save_figure"]


def save_figure(figure: Any, path: str | Path, **savefig: Any) -> None:
    """A matplotlib figure saved to ``path`` whole (drawn in memory first, in the format of its suffix)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format=Path(path).suffix.lstrip(".") or "png", **savefig)
    replace_atomically(path, buffer.getvalue())
