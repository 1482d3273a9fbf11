"""What reasoning models take: the settings each provider refuses, refused before any call; defaults adapted.

    fitted = fit_settings("openai/o4-mini", {"temperature": 0.0, "max_tokens": None}, given={}, role="task LM")
    fitted.settings      # {"temperature": 1.0, "max_tokens": None}: what is sent
    fitted.adapted       # [Adapted(role="task LM", setting="temperature", asked=0.0, sent=1.0, why=...)]
    fit_settings("openai/o4-mini", {"temperature": 0.3}, given={"temperature": "--temperature"}, role="task LM")
    # LMConfigError: --temperature 0.3 cannot be sent to the task LM openai/o4-mini: OpenAI's reasoning models ...

A setting is *given* when ``given`` names where it came from (``--temperature``, ``--lm-arg top_p``, a preset, a
config file); a setting the user did not give is a default of the command or the library. A given setting the
model's provider refuses is refused here, in one line naming the setting, its value and the role. A default the
provider would refuse (temperature 0, a small generation cap) is changed to what the provider takes, and the change
is returned (:class:`Adapted`), so a run can say so in its config.

The families:

- **OpenAI reasoning models** (o1, o3, o4-mini, ..., the GPT-5 family but its ``-chat`` models; DSPy 3.4.1's rule
  in ``dspy/clients/lm.py``): temperature 1 only (or none), a generation cap of at least 16,000 tokens (or none:
  DSPy refuses less, as the hidden reasoning counts against it), no ``top_p``, penalties, ``logprobs`` or
  ``logit_bias``; ``reasoning_effort`` one of none, minimal, low, medium, high, xhigh.
- **Anthropic extended thinking** (``anthropic/...`` with ``thinking={"type": "enabled", "budget_tokens": N}`` or
  ``reasoning_effort``): temperature 1 only, no ``top_k``, ``top_p`` within [0.95, 1], ``budget_tokens`` at least
  1,024 and below the generation cap (``max_tokens`` > ``budget_tokens``). Without thinking, temperatures above
  1 are refused (Anthropic's range is [0, 1]).
- **Gemini thinking** (``gemini/...``, ``vertex_ai/gemini...`` with ``thinking={"budget_tokens": N}`` or
  ``reasoning_effort``): a budget of at least 0 (the 2.5 Pro models cannot turn thinking off: not 0), and a
  generation cap above the budget, as the thinking tokens count against ``max_output_tokens``.
- OpenAI's other chat models (``gpt-4*``, ``gpt-3.5*``, ``chatgpt-*``) refuse ``reasoning_effort``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from .config_error import LMConfigError

__all__ = [
    "DEFAULT_ANSWER_TOKENS",
    "REASONING_EFFORTS",
    "Adapted",
    "Fitted",
    "fit_settings",
    "is_openai_reasoning_model",
    "reasoning_family",
]

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
OPENAI_REASONING_MIN_TOKENS = 16000  # DSPy's floor for OpenAI's reasoning models
ANTHROPIC_MIN_BUDGET = 1024
DEFAULT_ANSWER_TOKENS = 4096  # tokens left for the visible answer above a thinking budget, where no cap was given
# what OpenAI's reasoning models refuse besides temperature (OpenAI's reasoning guide: unsupported parameters)
OPENAI_REASONING_REFUSES = ("top_p", "presence_penalty", "frequency_penalty", "logprobs", "top_logprobs", "logit_bias")

_OPENAI_REASONING = re.compile(r"^(?:o[1345](?:-(?:mini|nano|pro))?(?:-\d{4}-\d{2}-\d{2})?|gpt-5(?:\.\d+)*(?!-chat)(?:-.*)?)$")
_OPENAI_CHAT = re.compile(r"^(?:gpt-4|gpt-3\.5|chatgpt-)")


def is_openai_reasoning_model(spec: str) -> bool:
    """Whether DSPy treats ``spec`` as one of OpenAI's reasoning models (it looks at the name after the last ``/``)."""
    return _OPENAI_REASONING.match(spec.split("/")[-1].lower()) is not None


def reasoning_family(spec: str | None, settings: Mapping[str, Any]) -> str | None:
    """``"openai"``, ``"anthropic"`` or ``"gemini"`` when ``spec`` with ``settings`` reasons before it answers, else
    None (OpenAI's reasoning models always do; Anthropic's and Gemini's when thinking or an effort is asked for)."""
    if not spec:
        return None
    provider, _, name = spec.partition("/")
    if is_openai_reasoning_model(spec):
        return "openai"
    thinks = _thinking_on(settings.get("thinking")) or settings.get("reasoning_effort") not in (None, "none", "disable")
    if provider == "anthropic" and thinks:
        return "anthropic"
    if (provider == "gemini" or (provider.startswith("vertex_ai") and name.startswith("gemini"))) and thinks:
        return "gemini"
    return None


@dataclass(frozen=True)
class Adapted:
    """A default changed to what the model's provider takes: ``asked`` was the default, ``sent`` is what goes out."""

    role: str
    model: str
    setting: str
    asked: Any
    sent: Any
    why: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        return f"{self.role} {self.model}: {self.setting} {_show(self.asked)} -> {_show(self.sent)} ({self.why})"


@dataclass
class Fitted:
    """The settings to send (``settings``) and the defaults changed on the way (``adapted``)."""

    settings: dict[str, Any]
    adapted: list[Adapted] = field(default_factory=list)


class _Fit:
    """One fitting: refuses a given setting, adapts a default one."""

    def __init__(self, spec: str, settings: Mapping[str, Any], given: Mapping[str, str], role: str):
        self.spec, self.role, self.given = spec, role, given
        self.settings = dict(settings)
        self.adapted: list[Adapted] = []

    def label(self, key: str) -> str | None:
        return self.given.get(key)

    def refuse(self, key: str, why: str) -> None:
        raise LMConfigError(
            f"{self.label(key) or key} {_show(self.settings[key])} cannot be sent to the {self.role} {self.spec}: {why}"
        )

    def require(self, key: str, ok: bool, why: str, adapted: Any = None) -> None:
        """``settings[key]`` must be ``ok``: a given value is refused, a default one becomes ``adapted``."""
        if ok:
            return
        if self.label(key) is not None:
            self.refuse(key, why)
        self.adapted.append(Adapted(self.role, self.spec, key, self.settings.get(key), adapted, why))
        self.settings[key] = adapted


def fit_settings(spec: str | None, settings: Mapping[str, Any], *, given: Mapping[str, str], role: str) -> Fitted:
    """``settings`` (``temperature``, ``max_tokens`` and any provider keyword) made fit for ``spec``; see the module.

    ``given``: setting -> where the user gave it (used in the one-line refusal); ``role``: ``"task LM"``,
    ``"memory LM"``, ... Raises :class:`memreason.lm.LMConfigError` for a given setting the provider refuses."""
    fit = _Fit(spec or "", settings, given, role)
    if not spec:
        return Fitted(fit.settings)
    family = reasoning_family(spec, fit.settings)
    provider, _, name = spec.partition("/")
    if family == "openai":
        _openai_reasoning(fit)
    elif family == "anthropic":
        _anthropic_thinking(fit)
    elif family == "gemini":
        _gemini_thinking(fit, name)
    else:
        _plain(fit, provider, name)
    return Fitted(fit.settings, fit.adapted)


def _openai_reasoning(fit: _Fit) -> None:
    s = fit.settings
    why = "OpenAI's reasoning models take temperature 1 only"
    fit.require("temperature", s.get("temperature") in (None, 1, 1.0), why, 1.0)
    cap = s.get("max_tokens")
    fit.require(
        "max_tokens",
        cap is None or cap >= OPENAI_REASONING_MIN_TOKENS,
        f"OpenAI's reasoning models need a generation cap of at least {OPENAI_REASONING_MIN_TOKENS:,} tokens (the hidden "
        "reasoning counts against it; DSPy refuses less) or none",
        OPENAI_REASONING_MIN_TOKENS,
    )
    for key in OPENAI_REASONING_REFUSES:
        if s.get(key) is not None:
            fit.refuse(key, f"OpenAI's reasoning models refuse {key}")
    if s.get("thinking") is not None:
        fit.refuse("thinking", "OpenAI's models take reasoning_effort, not thinking")
    _check_effort(fit)


def _anthropic_thinking(fit: _Fit) -> None:
    s = fit.settings
    budget = _budget(fit)
    if budget is not None and budget < ANTHROPIC_MIN_BUDGET:
        fit.refuse("thinking", f"Anthropic's extended thinking takes a budget_tokens of at least {ANTHROPIC_MIN_BUDGET:,}")
    fit.require(
        "temperature",
        s.get("temperature") in (None, 1, 1.0),
        "Anthropic's extended thinking takes temperature 1 only",
        1.0,
    )
    if s.get("top_k") is not None:
        fit.refuse("top_k", "Anthropic's extended thinking refuses top_k")
    if s.get("top_p") is not None and not 0.95 <= float(s["top_p"]) <= 1:
        fit.refuse("top_p", "Anthropic's extended thinking takes top_p within [0.95, 1] only")
    if budget is not None:
        _cap_above_budget(fit, budget, "Anthropic needs max_tokens above thinking.budget_tokens")
    _check_effort(fit)


def _gemini_thinking(fit: _Fit, name: str) -> None:
    budget = _budget(fit)
    if budget is not None and budget < 0 and budget != -1:
        fit.refuse("thinking", "Gemini's thinking budget is a number of tokens (at least 0; -1: the model decides)")
    if budget == 0 and "pro" in name:
        fit.refuse("thinking", "Gemini's Pro models cannot turn thinking off (budget 0)")
    if budget:  # the thinking tokens count against max_output_tokens
        _cap_above_budget(fit, budget, "Gemini counts the thinking tokens against max_output_tokens")
    _check_effort(fit)


def _plain(fit: _Fit, provider: str, name: str) -> None:
    s = fit.settings
    if provider == "anthropic" and s.get("temperature") is not None and s["temperature"] > 1:
        fit.require("temperature", False, "Anthropic's temperatures lie within [0, 1]", 1.0)
    if provider in ("openai", "azure") and _OPENAI_CHAT.match(name.lower()) and s.get("reasoning_effort") is not None:
        fit.refuse("reasoning_effort", "OpenAI's non-reasoning chat models refuse reasoning_effort")


def _check_effort(fit: _Fit) -> None:
    effort = fit.settings.get("reasoning_effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        fit.refuse("reasoning_effort", f"reasoning_effort is one of {', '.join(REASONING_EFFORTS)}")


def _cap_above_budget(fit: _Fit, budget: int, why: str) -> None:
    cap = fit.settings.get("max_tokens")
    if cap is not None and cap > budget:
        return
    if cap is None and fit.label("max_tokens") is None and "gemini" in fit.spec:
        return  # no cap: Gemini's own (far above any budget)
    fit.require("max_tokens", False, why, budget + (cap or DEFAULT_ANSWER_TOKENS))


def _thinking_on(thinking: Any) -> bool:
    if isinstance(thinking, Mapping):
        return thinking.get("type", "enabled") in ("enabled", "adaptive") and thinking.get("budget_tokens", 1) != 0
    return bool(thinking)


def _budget(fit: _Fit) -> int | None:
    """``thinking``'s budget_tokens, or None when it names none; a malformed one is refused."""
    thinking = fit.settings.get("thinking")
    if thinking is None:
        return None
    if not isinstance(thinking, Mapping):
        fit.refuse("thinking", 'thinking is an object such as {"type": "enabled", "budget_tokens": 2048}')
    budget = thinking.get("budget_tokens")
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int):
        fit.refuse("thinking", "thinking.budget_tokens is a whole number of tokens")
    return budget


def _show(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, separators=(",", ":"))
    return str(value)
