"""The one error a user can fix by changing what they asked for."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(ValueError):
    """Input the user can fix (a bad option, file or combination); the command line reports it as one line, exit code 2."""
