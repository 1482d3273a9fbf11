"""A run's manifest: which models answered, with which settings, on which versions, seeds and instructions.

    manifest = run_manifest(roles={"task": (choice, lm), "memory": (...)}, lms=tally_lms, seeds=..., instructions=...)
    results["manifest"] = manifest                     # RunSession.finish does this for every run
    manifest_differences(first, other)                 # ["task answered by gpt-4o-2024-08-06 (first: gpt-4o-2024-05-13)", ...]

For each role (``task``, ``memory``): the model string asked for (``asked``), the models that answered
(the ``model`` field of the responses, with how many calls; answers DSPy's cache held count too) and
the ``system_fingerprint`` of those that sent one, the role LM's own settings (``settings``: its
keywords, less the client's plumbing and any secret) and what the program sent on top of them with its
calls (``sent``: every value of each setting seen). Then the versions of memreason, DSPy, LiteLLM,
reasoning-gym and Python, the run's seeds, and a digest (SHA-256, 16 hex digits) of the instructions of
every predictor the program holds.

A run's manifest follows from its records and its config, as the rest of ``results.json`` does: a resumed
run's equals an uninterrupted one's. ``python -m eval report`` shows it, and flags the runs whose manifests
differ from the first run's (:func:`manifest_differences`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
from typing import Any, Iterable

from memreason.lm.redact import is_credential, redact
from memreason.lm.tokens import NOT_SETTINGS, setting_value

__all__ = [
    "instruction_digests",
    "lm_settings",
    "manifest_differences",
    "run_manifest",
    "seeds_of",
    "versions",
]

PACKAGES = {"memreason": "memreason", "dspy": "DSPy", "litellm": "LiteLLM", "reasoning-gym": "reasoning-gym"}


def versions() -> dict[str, str | None]:
    """The installed versions of memreason, DSPy, LiteLLM and reasoning-gym (None: not installed), and Python's."""
    found: dict[str, str | None] = {}
    for package in PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    found["python"] = platform.python_version()
    return found


def lm_settings(lm: Any) -> dict[str, Any]:
    """The settings an LM sends with every call (its keywords: temperature, max tokens, reasoning effort, ...),
    less the client's plumbing (address, timeout, retries) and any secret, as JSON values."""
    kwargs = getattr(lm, "kwargs", None) or {}
    return {
        key: setting_value(redact(value))
        for key, value in sorted(kwargs.items())
        if key not in NOT_SETTINGS and not is_credential(key) and value is not None
    }


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def instruction_digests(program: Any, prefix: str = "") -> dict[str, str]:
    """``{predictor name: digest of its signature's instructions}`` for every predictor ``program`` holds
    (``named_predictors``, and the memory writers' a program keeps out of that listing), names after ``prefix``."""
    named = getattr(program, "named_predictors", None)
    if named is None:
        return {}
    writers = getattr(program, "memory_writer_predictors", None)
    found = {}
    for name, predictor in [*named(), *(writers() if writers is not None else [])]:
        signature = getattr(predictor, "signature", None)
        found[prefix + name] = digest(str(getattr(signature, "instructions", "") or ""))
    return dict(sorted(found.items()))


def seeds_of(config: dict[str, Any]) -> dict[str, Any]:
    """The seeds a run's ``config.json`` names: ``seed`` and every ``*_seed``, its knobs' too."""
    seeds = {key: value for key, value in config.items() if _is_seed(key) and value is not None}
    knobs = config.get("knobs")
    if isinstance(knobs, dict):
        seeds.update({f"knobs.{key}": value for key, value in knobs.items() if _is_seed(key) and value is not None})
    return dict(sorted(seeds.items()))


def _is_seed(key: str) -> bool:
    return key in ("seed", "seeds") or key.endswith("_seed")


def run_manifest(
    *,
    roles: dict[str, tuple[str, Any]],
    lms: dict[str, Any],
    seeds: dict[str, Any],
    instructions: dict[str, str],
) -> dict[str, Any]:
    """The manifest of a run. ``roles``: ``{role: (the model string asked for, the LM that was called)}``;
    ``lms``: what the run's records say answered (:attr:`memreason.eval.harness.usage.UsageTally.lms`)."""
    return {
        "roles": {
            role: {
                "asked": asked,
                "answered": (lms.get(role) or {}).get("models") or {},
                "fingerprints": (lms.get(role) or {}).get("fingerprints") or {},
                "settings": lm_settings(lm),
                "sent": (lms.get(role) or {}).get("sent") or {},
            }
            for role, (asked, lm) in sorted(roles.items())
        },
        "versions": versions(),
        "seeds": seeds,
        "instructions": instructions,
    }


def manifest_differences(first: dict[str, Any] | None, other: dict[str, Any] | None) -> list[str]:
    """How ``other`` differs from ``first``, one phrase each: the models asked for and answering (when both
    roles answered), their fingerprints, the role's settings, what both programs sent, the versions, the seeds both
    name and the instructions of the predictors both hold (other programs hold other predictors: no difference)."""
    if not first or not other:
        return [] if first == other else ["no manifest" if not other else "the first run has no manifest"]
    found: list[str] = []
    a_roles, b_roles = first.get("roles") or {}, other.get("roles") or {}
    for role in sorted(set(a_roles) & set(b_roles)):
        a, b = a_roles[role], b_roles[role]
        if a.get("asked") != b.get("asked"):
            found.append(f"{role} LM {b.get('asked')} (first: {a.get('asked')})")
        if a.get("answered") and b.get("answered") and set(a["answered"]) != set(b["answered"]):
            found.append(f"{role} answered by {_names(b['answered'])} (first: {_names(a['answered'])})")
        if a.get("fingerprints") and b.get("fingerprints") and set(a["fingerprints"]) != set(b["fingerprints"]):
            found.append(f"{role} fingerprint {_names(b['fingerprints'])} (first: {_names(a['fingerprints'])})")
        found += _changed(f"{role} ", a.get("settings") or {}, b.get("settings") or {}, both=False)
        found += _changed(f"{role} sent ", a.get("sent") or {}, b.get("sent") or {}, both=True)
    found += _changed("", first.get("versions") or {}, other.get("versions") or {}, both=False, names=PACKAGES)
    found += _changed("", first.get("seeds") or {}, other.get("seeds") or {}, both=True)
    a_ins, b_ins = first.get("instructions") or {}, other.get("instructions") or {}
    changed = sorted(name for name in set(a_ins) & set(b_ins) if a_ins[name] != b_ins[name])
    if changed:
        found.append("instructions of " + ", ".join(changed))
    return found


def _names(counts: Iterable[str]) -> str:
    return ", ".join(sorted(counts)) or "none"


def _changed(prefix: str, a: dict[str, Any], b: dict[str, Any], *, both: bool, names: dict[str, str] | None = None) -> list[str]:
    """``prefix key value (first: value)`` for each key whose value differs (``both``: keys both hold only)."""
    keys = sorted(set(a) & set(b)) if both else sorted(set(a) | set(b))
    return [
        f"{prefix}{(names or {}).get(key, key)} {_shown(b.get(key, '(not set)'))} (first: {_shown(a.get(key, '(not set)'))})"
        for key in keys
        if _same(a.get(key, "(not set)")) != _same(b.get(key, "(not set)"))
    ]


def _same(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_same(v) for v in value]
    return value


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "/".join(_shown(v) for v in value)
    return "none" if value is None else str(value)
