"""Each role's LM settings from a preset, a ``--lm-config`` file and the flags given, in that order of strength.

    apply_lm_settings(args)     # at the edge, after parsing, before the options are typed

Layers, weakest first: the preset (``--preset``), the file (``--lm-config``: JSON, or TOML by its ``.toml``
suffix, ``{"task": {...}, "memory": {...}}``), the flags given (``--lm``, ``--temperature``, ``--lm-arg``,
``--memory-lm-arg``, ...). A role's ``model``, ``api_base``, ``temperature`` and ``max_tokens`` set the options
``--lm``/``--memory-lm``, ``--api-base``/``--memory-api-base``, ``--temperature``/``--memory-temperature`` and
``--max-tokens``/``--memory-max-tokens``; any other key is a keyword sent with every call of that role
(``--lm-arg``/``--memory-lm-arg``). Where each setting came from is kept in ``args.origins`` so that a setting a
model's provider refuses is refused naming it (memreason.lm.reasoning). The preset in use is printed at start.

Refused in one line, before any work: a setting that carries a credential, at any depth (``API_KEY``,
``extra_headers.Authorization``, ``extra_body.api_key``: :func:`memreason.lm.redact.credentials_in`), which comes
from the provider's environment variable instead; a setting with an empty value (``--lm-arg top_p=``); a
``--lm-config`` that is not a regular text file of at most :data:`LM_CONFIG_BYTES`.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any, Callable

from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.presets import PRESETS, ROLES
from memreason.files import read_text_file
from memreason.lm.redact import credential_refused, credentials_in

from .options import OPTIONS, note_origin

__all__ = ["LM_CONFIG_BYTES", "apply_lm_settings", "read_lm_config"]

log = logging.getLogger("memreason.eval.cli")

# A role's named settings -> (the option's dest, the flag that sets it)
NAMED = {
    "task": {
        "model": ("lm", "--lm"),
        "api_base": ("api_base", "--api-base"),
        "temperature": ("temperature", "--temperature"),
        "max_tokens": ("max_tokens", "--max-tokens"),
    },
    "memory": {
        "model": ("memory_lm", "--memory-lm"),
        "api_base": ("memory_api_base", "--memory-api-base"),
        "temperature": ("memory_temperature", "--memory-temperature"),
        "max_tokens": ("memory_max_tokens", "--memory-max-tokens"),
    },
}
KEYWORDS = {"task": ("lm_args", "--lm-arg"), "memory": ("memory_lm_args", "--memory-lm-arg")}
ALIASES = {"max_completion_tokens": "max_tokens", "max_output_tokens": "max_tokens"}  # other names of the cap
LM_CONFIG_BYTES = 64 * 2**10  # far above any model's settings; every setting is sent with every call
ROLE_NAMES = {"task": "task LM", "memory": "memory LM"}


def apply_lm_settings(args: argparse.Namespace) -> None:
    """Merge the preset, the ``--lm-config`` file and the flags given into ``args`` (see the module)."""
    args.origins = dict(getattr(args, "origins", None) or {})
    for role in ROLES:
        _fold_keywords(args, role)
    by_flag = set(args.origins)
    layers: list[tuple[str, dict[str, dict[str, Any]]]] = []
    name = getattr(args, "preset", None)
    if name is not None:
        found = PRESETS[name]
        log.info("%s; --lm-config and the flags given override it", found.describe())
        layers.append((f"--preset {name}", {role: dict(found.roles.get(role) or {}) for role in ROLES}))
    if getattr(args, "lm_config", None) is not None:
        layers.append((f"--lm-config {args.lm_config}", read_lm_config(Path(args.lm_config))))
    for source, roles in layers:
        for role, settings in roles.items():
            for key, value in settings.items():
                _set(args, role, ALIASES.get(key, key), value, source, by_flag)
    for role in ROLES:
        _refuse_credentials(args, role)


def _refuse_credentials(args: argparse.Namespace, role: str) -> None:
    """A keyword setting of ``role`` that carries a credential, at any depth, refused naming where it was given."""
    dest, flag = KEYWORDS[role]
    for key, value in (getattr(args, dest, None) or {}).items():
        found = credentials_in({key: value})
        if found:
            label = args.origins.get(f"{dest}.{key}", f"{flag} {key}")
            name = label if found[0] == key and label.endswith(f" {key}") else f"{label}: {found[0]}"
            raise UsageError(credential_refused(name, ROLE_NAMES[role]))


def read_lm_config(path: Path) -> dict[str, dict[str, Any]]:
    """The per-role settings ``path`` holds (JSON, or TOML by its suffix), checked: one line for what is wrong."""
    text = read_text_file(path, UsageError, "--lm-config", max_bytes=LM_CONFIG_BYTES)
    try:
        if path.suffix == ".toml":
            try:
                import tomllib
            except ModuleNotFoundError:  # Python 3.10
                raise UsageError(f"--lm-config {path}: TOML needs Python 3.11 or later; write it as JSON") from None
            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except ValueError as exc:
        kind = "TOML" if path.suffix == ".toml" else "JSON"
        raise UsageError(f"--lm-config {path} is not {kind}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict) or not data or set(data) - set(ROLES):
        raise UsageError(
            f"--lm-config {path} holds an object with the roles task and/or memory, each an object of settings "
            f'({{"task": {{"model": "openai/o4-mini", "reasoning_effort": "medium"}}, "memory": {{...}}}})'
        )
    for role, settings in data.items():
        if not isinstance(settings, dict):
            raise UsageError(f"--lm-config {path}: {role} must be an object of settings, got {settings!r}")
    found = credentials_in(data)
    if found:
        role = found[0].partition(".")[0]
        raise UsageError(credential_refused(f"--lm-config {path} ({found[0]})", ROLE_NAMES[role]))
    return data


def _fold_keywords(args: argparse.Namespace, role: str) -> None:
    """``--lm-arg temperature=...`` and ``max_tokens=...`` are ``--temperature`` and ``--max-tokens`` (the memory
    role's: ``--memory-temperature``, ...); ``model`` and ``api_base`` have flags of their own."""
    dest, flag = KEYWORDS[role]
    keywords = dict(getattr(args, dest, None) or {})
    for key in list(keywords):
        name = ALIASES.get(key, key)
        if name in ("model", "api_base"):
            own = NAMED[role][name][1]
            raise UsageError(f"{flag} {key}: give the {role} LM's {name.replace('_', ' ')} with {own}")
        if name not in ("temperature", "max_tokens"):
            continue
        value = keywords.pop(key)
        target, named_flag = NAMED[role][name]
        label = args.origins.pop(f"{dest}.{key}", f"{flag} {key}")
        checked = _check(role, name, value, label)
        if target in args.origins and getattr(args, target, None) != checked:
            raise UsageError(f"{args.origins[target]} {getattr(args, target)} and {label}={value} disagree: give one")
        setattr(args, target, checked)
        note_origin(args, target, label)
    setattr(args, dest, keywords)


def _set(args: argparse.Namespace, role: str, key: str, value: Any, source: str, by_flag: set[str]) -> None:
    """One setting of a layer: ignored where a flag gave it, else set and its source noted."""
    label = f"{source} ({role}.{key})"
    if isinstance(value, str) and not value.strip():
        raise UsageError(f"{label} is empty: give it a value, or leave it out")
    if key in NAMED[role]:
        target, _ = NAMED[role][key]
        if target in by_flag:
            return
        setattr(args, target, _check(role, key, value, label))
        note_origin(args, target, label)
        return
    dest, _ = KEYWORDS[role]
    if f"{dest}.{key}" in by_flag:
        return
    setattr(args, dest, {**(getattr(args, dest, None) or {}), key: value})
    note_origin(args, f"{dest}.{key}", label)


def _check(role: str, key: str, value: Any, label: str) -> Any:
    """``value`` run through the type of the option it sets, as if typed after it (``None`` passes)."""
    if value is None:
        return None
    flag = NAMED[role][key][1]
    kind: Callable[[str], Any] | None = OPTIONS[flag].get("type")
    if isinstance(value, bool) or isinstance(value, (dict, list)):
        raise UsageError(f"{label} takes a value as {flag} does, got {value!r}")
    try:
        return kind(str(value)) if kind is not None else value
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"{label}: {exc}") from None
