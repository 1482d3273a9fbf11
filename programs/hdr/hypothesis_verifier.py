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

from memreason.signatures import NEUTRAL_TASK, TaskDescription, Verdict

from ..shared.checks import some_episodes, texts
from ..shared.episodes import as_episodes
from ..shared.normalise import distinct, normalise
from ..shared.steps import StepModule, Steps, call

__all__ = ["HypothesisVerifier", "Judgement", "Outcome"]

Outcome = Literal["valid", "invalid", "unjudged"]


@dataclass(frozen=True)
class Judgement:
    """What the verifier decided about one hypothesis it was given."""

    hypothesis: str
    verdict: Outcome
    reason: str


class HypothesisVerifier(StepModule):
    """Judge all hypotheses against the episodes in one call; keep the valid ones."""

    def __init__(self, *, task_description: TaskDescription = NEUTRAL_TASK):
        """One call judges every hypothesis given (none given, no call).

        Args:
            task_description: how the prompt speaks of the task's episodes (default: any task).
        """
        super().__init__()
        self.verify = dspy.Predict(task_description.hypothesis_verification_signature())

    def steps(self, episodes, factors: Sequence[str] = (), hypotheses: Sequence[str] = ()) -> Steps[dspy.Prediction]:
        """``valid``: the hypotheses kept, in input order; ``judgements``: one per hypothesis, aligned."""
        episodes, factors = as_episodes(episodes), texts("factors", factors)
        hypotheses = distinct(texts("hypotheses", hypotheses))
        if not hypotheses:
            return dspy.Prediction(valid=[], judgements=[])
        some_episodes(episodes, "HypothesisVerifier")
        out = yield call(self.verify, episodes=episodes, factors=factors, hypotheses=hypotheses)
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
