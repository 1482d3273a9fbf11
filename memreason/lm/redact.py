"""Credentials never recorded: ``user:password@`` taken out of every URL before a value is written anywhere.

    redact("http://me:secret@host:8000/v1")      -> "http://***@host:8000/v1"
    redact({"api_base": "...", "runs": [...]})   -> the same structure, every string redacted

Run directories, study summaries, MLflow params and failure reasons are meant to be shared;
a password in ``--api-base`` or ``--storage`` must not travel with them. A run resumed from
a redacted config needs the URL again (``--resume RUN --api-base URL``).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["redact"]

# scheme://userinfo@ : userinfo is anything up to the first @ that holds no /, whitespace or quote
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s'\"]+@")
# user:password@host with no scheme (how some clients quote the address they failed to reach)
_BARE = re.compile(r"(?<![\w/.:@-])[^\s/@:'\"]+:[^\s/@'\"]+@(?=[A-Za-z0-9\[])")


def redact(value: Any) -> Any:
    """``value`` with the user information of every URL in its strings replaced by ``***``
    (dicts, lists and tuples walked; other values returned as they are)."""
    if isinstance(value, str):
        return _BARE.sub("***@", _USERINFO.sub(r"\g<scheme>***@", value))
    if isinstance(value, dict):
        return {key: redact(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(item) for item in value)
    return value
