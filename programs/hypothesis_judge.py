"""The LM judge of ``hypothesis_match_f1``: which reference rules each hypothesis states (HypoBench-style).

One call per generated hypothesis, each seeing all the reference rules. The rules
a judgement names are matched back by their (normalised) text; a name that is not
one of the rules is ignored.
"""

from __future__ import annotations

from typing import Sequence

import dspy

from memreason.signatures import MatchHypothesis

from .normalise import normalise


class HypothesisJudge(dspy.Module):
    """Match every generated hypothesis to the reference rules it states."""

    def __init__(self):
        super().__init__()
        self.match = dspy.Predict(MatchHypothesis)

    def forward(self, hypotheses: Sequence[str], rules: Sequence[str]) -> dspy.Prediction:
        """``matches``: for each hypothesis, the indices of the rules it states (possibly none)."""
        index = {normalise(rule): i for i, rule in enumerate(rules)}
        matches = []
        for hypothesis in hypotheses:
            named = self.match(rules=list(rules), hypothesis=hypothesis).matches
            matches.append(sorted({index[normalise(n)] for n in named if normalise(n) in index}))
        return dspy.Prediction(matches=matches)
