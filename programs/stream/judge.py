"""``learn_from="self"``: the model's own judgement of its answer, the only verdict a write gets without a
reference answer or a check.

    verdict = SelfJudge()(problem="...", answer="...").correct      # True / False
"""

from __future__ import annotations

import dspy

from memreason.signatures.stream import JudgeOwnAnswer

__all__ = ["SelfJudge"]


class SelfJudge(dspy.Module):
    """Ask the LM whether an answer to a problem is right."""

    def __init__(self):
        super().__init__()
        self.judge = dspy.Predict(JudgeOwnAnswer)

    def forward(self, problem: str, answer: str) -> dspy.Prediction:
        return dspy.Prediction(correct=bool(self.judge(problem=problem, answer=answer).correct))
