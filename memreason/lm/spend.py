"""Spending limits: what a run has spent on LM calls, in tokens and dollars, against a cap.

    spend = Spend(max_tokens=50_000)              # --budget-tokens 50000 (max_usd: --budget-usd)
    spend.add(Tokens(1200, 80, 3), price("openai/gpt-4o-mini"))   # what earlier processes recorded
    lm = GuardedLM(choice.lm, role="task", spend=spend, price=...)  # each answered call adds its tokens
    spend.reached                                 # True once either cap is met: start no new item
    spend.describe()                              # "10,240 tokens of 10,000"

Tokens are prompt + completion of every answered call, as :class:`memreason.lm.tokens.Meter`
counts them (an answer replayed from DSPy's cache counts what it took). Dollars are the
tokens at LiteLLM's offline prices (:mod:`memreason.lm.cost`); a call of a model with no
price adds no dollars, so a dollar cap is only accepted for models with a price.

With ``refuse`` set (commands whose work is not a list of items: a DSPy optimizer's compile),
a guarded LM refuses every call once the cap is reached (:class:`memreason.lm.faults.BudgetReached`)
and counts the refusals; otherwise the harness stops starting items and lets calls in flight finish.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .cost import Price
from .tokens import Tokens

__all__ = ["Spend"]


@dataclass
class Spend:
    """Tokens and dollars spent, the caps (None: none), thread-safe."""

    max_tokens: int | None = None
    max_usd: float | None = None
    tokens: int = 0  # prompt + completion, this process and what the run's records held at its start
    usd: float = 0.0
    earlier_tokens: int = 0  # of those, what the run's records held at the start of this process
    earlier_usd: float = 0.0
    refuse: bool = False
    refused: int = 0  # calls refused once the cap was reached (with ``refuse``)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def capped(self) -> bool:
        return self.max_tokens is not None or self.max_usd is not None

    def add(self, tokens: Tokens, price: Price | None = None, *, earlier: bool = False) -> None:
        """Count ``tokens`` (at ``price`` per token, None: no dollars); ``earlier``: recorded by an earlier process."""
        usd = price.of(tokens) if price is not None else 0.0
        with self.lock:
            self.tokens += tokens.total
            self.usd += usd
            if earlier:
                self.earlier_tokens += tokens.total
                self.earlier_usd += usd

    def add_call(self, prompt: int, completion: int, price: Price | None, *, reasoning: int = 0) -> None:
        """One answered LM call (``reasoning``: its reasoning tokens, part of ``completion``)."""
        self.add(Tokens(prompt, completion, 1, reasoning), price)

    @property
    def reached(self) -> bool:
        """Whether a cap is met: no new item starts."""
        return (self.max_tokens is not None and self.tokens >= self.max_tokens) or (
            self.max_usd is not None and self.usd >= self.max_usd
        )

    def refusing(self) -> bool:
        """Whether a call must be refused now (counted): ``refuse`` and the cap reached."""
        if not (self.refuse and self.reached):
            return False
        with self.lock:
            self.refused += 1
        return True

    def describe(self) -> str:
        """The spend against each cap: ``"10,240 tokens of 10,000; $0.0031 of $0.01"``."""
        parts = []
        if self.max_tokens is not None:
            parts.append(f"{self.tokens:,} tokens of {self.max_tokens:,}")
        if self.max_usd is not None:
            parts.append(f"${self.usd:.4f} of ${self.max_usd:g}")
        return "; ".join(parts) or f"{self.tokens:,} tokens, ${self.usd:.4f}"

    def why(self, where: Any = None) -> str:
        """Why the run stops, for :class:`memreason.lm.faults.RunAborted`."""
        kept = f"what the run has is in {where}" if where is not None else "the work so far is kept"
        flags = " / ".join(
            flag for flag, cap in (("--budget-tokens", self.max_tokens), ("--budget-usd", self.max_usd)) if cap is not None
        )
        return f"the budget was reached ({self.describe()}); {kept}: rerun the same command with a larger {flags} to continue"

    def as_dict(self) -> dict[str, Any]:
        """The spend and the caps, for ``results["execution"]["budget"]``."""
        return {
            "budget_tokens": self.max_tokens,
            "budget_usd": self.max_usd,
            "spent_tokens": self.tokens,
            "spent_usd": round(self.usd, 6),
            "earlier_tokens": self.earlier_tokens,
            "earlier_usd": round(self.earlier_usd, 6),
            "reached": self.reached,
        }
