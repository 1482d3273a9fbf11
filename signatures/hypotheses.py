"""Signatures of HDR's memory consolidator: factor extraction, hypothesis generation, verification.

    F_i = FE(M_episodic, F_{i-1})
    H   = HG(M_episodic, F, H_{j-1})
    HV(M_episodic, F, H) -> one verdict per hypothesis, `valid` or `invalid`

Episodes come first in every signature and the part that changes between calls
(current factors, previous hypotheses, hypotheses to judge) comes last, so a local
model reuses the shared prompt prefix. The instructions name no attribute values
or labels: they must not leak a rule table into the prompt. They name no task either:
a program states its task's episodes and attributes through a :class:`TaskDescription`
(:mod:`.task_description`), which rewords them, Experience-Transfer's included.
"""

from __future__ import annotations

from typing import Literal

import dspy
from pydantic import BaseModel, Field, field_validator

from .experience_transfer import Episode

__all__ = ["FactorExtraction", "HypothesisGeneration", "HypothesisVerification", "Verdict"]


class FactorExtraction(dspy.Signature):
    """List the factors that may explain which label each episode carries.

    A factor is an attribute of the observations, or a combination of attributes,
    whose values could decide an episode's label. Revise the current factors against
    the episodes: keep those that could matter, drop those that cannot, add any that
    are missing, and return the whole revised list, one short noun phrase per factor."""

    episodes: list[Episode] = dspy.InputField(desc="episodic memory: labelled observations")
    current_factors: list[str] = dspy.InputField(desc="the factors found so far; empty on the first pass")
    factors: list[str] = dspy.OutputField(desc="the revised list of candidate factors")


class HypothesisGeneration(dspy.Signature):
    """Propose hypotheses that explain which label each episode carries.

    A hypothesis is an explicit rule in natural language stating which observations
    carry which label, in terms of the factors' values, definite enough to be checked
    against every episode. One hypothesis may cover many observations. The previous
    hypotheses passed verification: keep them, refine them (more general where the
    episodes allow it, more precise where they demand it), and add new hypotheses for
    the episodes they do not yet explain. With no previous hypotheses, start afresh; with no
    factors, find the relevant attributes yourself."""

    episodes: list[Episode] = dspy.InputField(desc="episodic memory: labelled observations")
    factors: list[str] = dspy.InputField(desc="candidate factors that may explain the labels; may be empty")
    previous_hypotheses: list[str] = dspy.InputField(desc="hypotheses that survived the last verification; may be empty")
    hypotheses: list[str] = dspy.OutputField(desc="the hypotheses, one rule each")


class Verdict(BaseModel):
    """The verifier's judgement of one hypothesis."""

    hypothesis: str = Field(description="the hypothesis judged, copied exactly")
    reason: str = Field(description="an episode that contradicts it, or why every episode agrees with it")
    verdict: Literal["valid", "invalid"] = Field(description="valid only if no episode contradicts the hypothesis")

    @field_validator("verdict", mode="before")
    @classmethod
    def _plain_word(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


class HypothesisVerification(dspy.Signature):
    """Judge every hypothesis against every episode.

    A hypothesis is valid when it states a definite rule and no episode contradicts
    it; otherwise it is invalid. Give exactly one verdict per hypothesis, in the
    order given, copying each hypothesis exactly, with the reason before the verdict."""

    episodes: list[Episode] = dspy.InputField(desc="episodic memory: labelled observations")
    factors: list[str] = dspy.InputField(desc="candidate factors that may explain the labels")
    hypotheses: list[str] = dspy.InputField(desc="the hypotheses to judge, all of them")
    verdicts: list[Verdict] = dspy.OutputField(desc="one verdict per hypothesis")
