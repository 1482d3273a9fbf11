"""Credentials never recorded: ``user:password@`` taken out of every URL, and every setting named as a credential
masked, before a value is written anywhere.

    redact("http://me:secret@host:8000/v1")            -> "http://***@host:8000/v1"
    redact({"extra_headers": {"Authorization": "x"}})  -> {"extra_headers": {"Authorization": "***"}}
    redact({"api_base": "...", "runs": [...]})         -> the same structure, every string redacted
    is_credential("X-Api-Key")                         -> True (a key, token, secret, password or auth header)
    credentials_in({"extra_body": {"API_KEY": "x"}})   -> ["extra_body.API_KEY"]

Run directories, study summaries, MLflow params and failure reasons are meant to be shared;
a password in ``--api-base`` or ``--storage`` must not travel with them. A run resumed from
a redacted config needs the URL again (``--resume RUN --api-base URL``). The command line refuses a
credential among the LM settings (:func:`credentials_in`): credentials come from the provider's environment
variables; :func:`redact` masks one all the same wherever settings are written.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MASK", "credential_refused", "credentials_in", "is_credential", "redact"]

MASK = "***"
# scheme://userinfo@ : userinfo is anything up to the first @ that holds no /, whitespace or quote
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s'\"]+@")
# user:password@host with no scheme (how some clients quote the address they failed to reach)
_BARE = re.compile(r"(?<![\w/.:@-])[^\s/@:'\"]+:[^\s/@'\"]+@(?=[A-Za-z0-9\[])")
# A name's words: split at anything but letters and digits, and where a lower-case letter meets an upper-case one.
_WORDS = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
# Words that make a setting's name a credential's: api_key, X-Api-Key, access_token, Authorization, Proxy-Auth,
# client_secret, password, Cookie ... ("tokens" is a count: max_tokens, budget_tokens are no credentials).
CREDENTIAL_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "pwd", "authorization", "auth", "credential", "credentials"}
    | {"cookie", "bearer"}
)
# Words that make such a name a number's instead: promptTokenCount, token_limit, max_token.
COUNT_WORDS = frozenset({"count", "counts", "limit", "limits", "max", "min", "budget", "length", "size"})


def is_credential(name: Any) -> bool:
    """Whether a setting (or header) named ``name`` carries a credential, by its words, in any case."""
    if not isinstance(name, str):
        return False
    words = {word.lower() for word in _WORDS.split(name) if word}
    return bool(words & CREDENTIAL_WORDS) and not words & COUNT_WORDS


def credentials_in(value: Any, prefix: str = "") -> list[str]:
    """The dotted names of every credential-named key in ``value`` (dicts and lists walked, at any depth)."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{prefix}{key}"
            if is_credential(key):
                found.append(name)
            else:
                found.extend(credentials_in(item, f"{name}."))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found.extend(credentials_in(item, f"{prefix}{index}."))
    return found


def credential_refused(name: str, role: str) -> str:
    """The line that refuses the credential-bearing setting ``name`` of ``role`` (its value never shown)."""
    return (
        f"{name} carries a credential, which is no setting of the {role}: give credentials through the provider's "
        "environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, ...) or in the --api-base address"
    )


def redact(value: Any) -> Any:
    """``value`` with the user information of every URL in its strings replaced by ``***``, and the value of every
    key named as a credential (:func:`is_credential`) replaced by ``***`` (dicts, lists and tuples walked; other
    values returned as they are)."""
    if isinstance(value, str):
        return _BARE.sub("***@", _USERINFO.sub(r"\g<scheme>***@", value))
    if isinstance(value, dict):
        return {key: MASK if is_credential(key) and item is not None else redact(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(item) for item in value)
    return value
