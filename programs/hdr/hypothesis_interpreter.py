"""The LM interpreter of ``hypothesis_f1``: what label any hypothesis implies, for any LM.

The same contract as :func:`memreason.programs.hdr.hypothesis_parser.parse_implications`, for
hypotheses in free wording: one call per hypothesis, each seeing the whole set
(so relative rules such as the background flip can be read against the others). It
answers in labels only, so where the parser reads the flip on its own
(``OtherThan``), the LM states the labels it implies given the rest of the set.
Combinations the answer leaves out, or maps to anything but one of the labels,
count as silent (``None``).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import dspy

from memreason.signatures import InterpretHypothesis

from ..shared.normalise import normalise
from ..shared.steps import StepModule, Steps, call

__all__ = ["HypothesisInterpreter", "describe"]


class HypothesisInterpreter(StepModule):
    """State, for every hypothesis and every attribute combination, the label implied or ``None``."""

    def __init__(self):
        """No knobs: one call per hypothesis."""
        super().__init__()
        self.interpret = dspy.Predict(InterpretHypothesis)

    def steps(
        self, hypotheses: Sequence[str], combinations: Sequence[Mapping[str, str]], labels: Sequence[str]
    ) -> Steps[dspy.Prediction]:
        """``implications``: one row per hypothesis, one label or ``None`` per combination."""
        described = [describe(c) for c in combinations]
        by_key = {normalise(label): label for label in labels}
        rows = []
        for hypothesis in hypotheses:
            implied = (
                yield call(
                    self.interpret,
                    labels=list(labels),
                    combinations=described,
                    hypotheses=list(hypotheses),
                    hypothesis=hypothesis,
                )
            ).implied
            said = {normalise(k): by_key.get(normalise(v)) for k, v in implied.items()}
            rows.append([said.get(normalise(d)) for d in described])
        return dspy.Prediction(implications=rows)


def describe(combination: Mapping[str, str]) -> str:
    """How a combination is shown to the interpreter: ``"shape: square, color: red, background: white"``."""
    return ", ".join(f"{attr}: {value}" for attr, value in combination.items())
