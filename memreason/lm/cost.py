"""Dollar cost of a run's tokens, from LiteLLM's bundled price list (never fetched).

    price("openai/gpt-4o-mini")          # Price(input=1.5e-07, output=6e-07) per token
    price("embedded")                    # None: a local model has no price
    role_costs({"task": ("openai/gpt-4o-mini", Tokens(...)), "memory": (...)})

A price is known when LiteLLM's map (``LITELLM_LOCAL_MODEL_COST_MAP=True`` keeps it
offline) has the model string, or the model id after its provider prefix with that
provider. Unknown prices are reported as None, never as zero.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .tokens import Tokens


@dataclass(frozen=True)
class Price:
    input: float  # dollars per prompt token
    output: float  # dollars per completion token
    reasoning: float | None = None  # dollars per reasoning token, where the price list has its own (else: output)

    def of(self, tokens: Tokens) -> float:
        return tokens.prompt * self.input + tokens.visible * self.output + self.of_reasoning(tokens)

    def of_reasoning(self, tokens: Tokens) -> float:
        """What the reasoning tokens (part of the completion tokens) cost."""
        return tokens.reasoning * (self.output if self.reasoning is None else self.reasoning)


def price(model: str | None) -> Price | None:
    """The per-token price of ``model`` (a DSPy/LiteLLM model string), or None when unknown or local."""
    if not model or model == "embedded" or model.startswith(("local:", "local/", "scripted")):
        return None
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        return None
    table = litellm.model_cost
    provider, _, name = model.partition("/")
    candidates = [(model, None)] + ([(name, provider)] if name else [])
    for key, wanted_provider in candidates:
        info = table.get(key)
        if not info:
            continue
        if wanted_provider and not str(info.get("litellm_provider", "")).startswith(wanted_provider):
            continue
        cost_in, cost_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
        cost_reasoning = info.get("output_cost_per_reasoning_token")
        if isinstance(cost_in, (int, float)) and isinstance(cost_out, (int, float)):
            reasoning = float(cost_reasoning) if isinstance(cost_reasoning, (int, float)) else None
            return Price(float(cost_in), float(cost_out), reasoning)
    return None


def role_costs(roles: dict[str, tuple[str | None, Tokens]]) -> dict[str, Any]:
    """``{"memory": $, "task": $, "total": $, "currency": "USD", "models": {...}}``; None where a price is unknown.
    Where reasoning tokens were spent, ``reasoning`` holds what they cost by role (part of each role's cost)."""
    out: dict[str, Any] = {}
    total: float | None = 0.0
    models: dict[str, Any] = {}
    reasoning: dict[str, float | None] = {}
    for role, (model, tokens) in roles.items():
        found = price(model)
        value = round(found.of(tokens), 6) if found else (0.0 if tokens.total == 0 else None)
        if tokens.reasoning:
            reasoning[role] = round(found.of_reasoning(tokens), 6) if found else None
        out[role] = value
        models[role] = {
            "model": model,
            "per_million_input": found and round(found.input * 1e6, 4),
            "per_million_output": found and round(found.output * 1e6, 4),
        }
        total = None if total is None or value is None else total + value
    out["total"] = None if total is None else round(total, 6)
    out["currency"] = "USD"
    out["prices"] = models
    if reasoning:
        out["reasoning"] = reasoning
    return out
