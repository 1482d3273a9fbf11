"""The one error of an LM that cannot be used as given, raised before any call (reported as one line, exit 2)."""

from __future__ import annotations

__all__ = ["LMConfigError"]


class LMConfigError(ValueError):
    """An LM that cannot be used as given (unknown, missing key, missing file, a setting its provider refuses)."""
