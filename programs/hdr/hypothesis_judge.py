"""The LM judge of ``hypothesis_match_f1``: which reference rules each hypothesis states (HypoBench-style).

One call per generated hypothesis, each seeing all the reference rules. The rules
a judgement names are matched back by their (normalised) text; a name that is not
one of the rules is ignored.
"""

from __future__ import annotations

from typing import Sequence

import dspy

from memreason.signatures import MatchHypothesis

from ..shared.normalise import normalise
from ..shared.steps import StepModule, Steps, call

__all__ = ["HypothesisJudge"]


class HypothesisJudge(StepModule):
    """Match every generated hypothesis to the reference rules it states."""

    def __init__(self):
        """No knobs: one call per generated hypothesis."""
        super().__init__()
        self.match = dspy.Predict(MatchHypothesis)

    def steps(self, hypotheses: Sequence[str], rules: Sequence[str]) -> Steps[dspy.Prediction]:
        """``matches``: for each hypothesis, the indices of the rules it states (possibly none)."""
        index = {normalise(rule): i for i, rule in enumerate(rules)}
        matches = []
        for hypothesis in hypotheses:
            named = (yield call(self.match, rules=list(rules), hypothesis=hypothesis)).matches
            matches.append(sorted({index[normalise(n)] for n in named if normalise(n) in index}))
        return dspy.Prediction(matches=matches)
