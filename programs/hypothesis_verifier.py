"""HV, the verifier of HDR's iterative hypothesis refinement (Algorithm 1, line 15).

    H_valid <- {h in H | HV(h, M_episodic, F) = valid}

All hypotheses are judged in one call. Strict filtering, as in the paper: a
hypothesis is kept only when the verifier explicitly called it `valid` and never
`invalid`. Verdicts are matched to hypotheses by their (normalised) text, never
by position, so a verifier that returns too few or too many verdicts, repeats
one, or names a hypothesis it was not given cannot smuggle anything in: a
hypothesis left without a verdict is ``unjudged`` and discarded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import dspy

from memreason.signatures import HypothesisVerification, Verdict

from .episodes import as_episodes
from .normalise import distinct, normalise
from .steps import Steps, arun, call, run

Outcome = Literal["valid", "invalid", "unjudged"]


@dataclass(frozen=True)
class Judgement:
    """What the verifier decided about one hypothesis it was given."""

    hypothesis: str
    verdict: Outcome
    reason: str


class HypothesisVerifier(dspy.Module):
    """Judge all hypotheses against the episodes in one call; keep the valid ones."""

    def __init__(self):
        """No knobs: one call judges every hypothesis given (none given, no call)."""
        super().__init__()
        self.verify = dspy.Predict(HypothesisVerification)

    def forward(self, episodes, factors: Sequence[str] = (), hypotheses: Sequence[str] = ()) -> dspy.Prediction:
        """``valid``: the hypotheses kept, in input order; ``judgements``: one per hypothesis, aligned."""
        return run(self.steps(episodes, factors, hypotheses))

    async def aforward(self, episodes, factors: Sequence[str] = (), hypotheses: Sequence[str] = ()) -> dspy.Prediction:
        return await arun(self.steps(episodes, factors, hypotheses))

    def steps(self, episodes, factors: Sequence[str] = (), hypotheses: Sequence[str] = ()) -> Steps[dspy.Prediction]:
        hypotheses = distinct(hypotheses)
        if not hypotheses:
            return dspy.Prediction(valid=[], judgements=[])
        out = yield call(self.verify, episodes=as_episodes(episodes), factors=list(factors), hypotheses=hypotheses)
        said: dict[str, list[Verdict]] = {}
        for verdict in out.verdicts:
            said.setdefault(normalise(verdict.hypothesis), []).append(verdict)
        judgements = [_judge(h, said.get(normalise(h), [])) for h in hypotheses]
        return dspy.Prediction(valid=[j.hypothesis for j in judgements if j.verdict == "valid"], judgements=judgements)


def _judge(hypothesis: str, verdicts: list[Verdict]) -> Judgement:
    if not verdicts:
        return Judgement(hypothesis, "unjudged", "the verifier gave no verdict for it")
    invalid = [v for v in verdicts if v.verdict == "invalid"]
    decisive = invalid[0] if invalid else verdicts[0]
    return Judgement(hypothesis, decisive.verdict, decisive.reason)
