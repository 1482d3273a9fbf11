"""Signatures for scoring generated hypotheses against a rule table (``hypothesis_f1``).

Two ways to score (the HDR paper scored its Table 5 by hand; these automate it):
- extensional: an interpreter states, for every attribute combination, the label a
  hypothesis implies or "silent"; the arithmetic then compares with the table;
- matching, like HypoBench: a judge says which reference rules a hypothesis states.

What repeats across calls (labels, combinations, the whole set, the reference
rules) comes first; the one hypothesis under scrutiny comes last.
"""

from __future__ import annotations

import dspy

SILENT = "silent"


class InterpretHypothesis(dspy.Signature):
    """State what one hypothesis implies about the label of each combination of attributes.

    For every combination, give the label the hypothesis implies for an object with
    exactly those attributes, or "silent" when the hypothesis does not decide it
    (it is about other objects, or depends on something the combination does not
    fix, such as position or size). Read the hypothesis on its own terms; use the
    other hypotheses of the set only when it refers to them (for example "the same
    object has the other label on the other background")."""

    labels: list[str] = dspy.InputField(desc="the labels an object can carry")
    combinations: list[str] = dspy.InputField(desc="attribute combinations, one object each")
    hypotheses: list[str] = dspy.InputField(desc="the whole hypothesis set the hypothesis belongs to")
    hypothesis: str = dspy.InputField(desc="the hypothesis to interpret")
    implied: dict[str, str] = dspy.OutputField(
        desc=f'each combination, copied exactly, mapped to the label implied or "{SILENT}"'
    )


class MatchHypothesis(dspy.Signature):
    """Judge which reference rules a generated hypothesis states.

    A hypothesis matches a reference rule when it says the same thing: the same
    objects carry the same label, in any wording. It may state several rules at once
    (for example one rule for both shapes of a colour). A hypothesis that is wrong
    about any object matches nothing."""

    rules: list[str] = dspy.InputField(desc="the reference rules")
    hypothesis: str = dspy.InputField(desc="the generated hypothesis to judge")
    matches: list[str] = dspy.OutputField(desc="the reference rules it states, copied exactly; empty if none")
