"""The checked program on ACRE: blicket hypotheses proposed by the LM, checked in code against every experiment.

    for round in 1..N:
        H <- Propose(experiments, refuted)           # blickets, non-blickets, rule (any | all)
        for h in H, new:  check(h, experiments)       # blicket_check: refuted with named experiments
        stop at the first h that passes
    y = answer(h, experiments, objects)               # in code; no hypothesis kept: the reasoner answers

Objects are named as the experiments name them (``red metal sphere``); a hypothesis naming an
object no experiment holds is refuted too. An episode's observation is its objects joined by
``", "`` and its label the light's state, as :mod:`memreason.datasets.inductive.acre` makes them.
"""

from __future__ import annotations

from typing import Any

import dspy

from memreason.signatures import AnswerDetector, Episode, ProposeBlicketHypotheses, Refuted

from ..shared.steps import Steps, call
from .blicket_check import BlicketHypothesis, Experiment, answer, check
from .checked_program import CheckedProgram

__all__ = ["CheckedBlickets", "experiments_of"]


def experiments_of(episodes: list[Episode]) -> list[Experiment]:
    """The episodes as experiments, numbered from 1."""
    return [
        Experiment(i + 1, _objects(str(e.observation).split(",")), str(e.label).strip().lower()) for i, e in enumerate(episodes)
    ]


def _objects(names) -> tuple[str, ...]:
    return tuple(" ".join(str(n).lower().split()) for n in names if str(n).strip())


class CheckedBlickets(CheckedProgram):
    """ACRE: the blicket hypothesis that no experiment refutes, applied in code."""

    answer_signature = AnswerDetector

    def __init__(self, *, N: int = 3, freeze_memory_writers: bool = True, **reader_knobs: Any):
        """
        Args:
            N: the most propose-check rounds.
            freeze_memory_writers: keep the proposer out of optimizers' reach (default True).
            **reader_knobs: the fallback reasoner's knobs.
        """
        super().__init__(N=N, freeze_memory_writers=freeze_memory_writers, **reader_knobs)
        self.propose = dspy.Predict(ProposeBlicketHypotheses)

    def checked(self, episodes: list[Episode], refuted: list[Refuted], known: set[Any]) -> Steps[tuple[list, Any]]:
        experiments = experiments_of(episodes)
        shown = [Episode(observation=f"experiment {e.number}: {', '.join(e.objects)}", label=e.light) for e in experiments]
        out = yield call(self.propose, experiments=shown, refuted=refuted)
        seen = {o for e in experiments for o in e.objects}
        checks = []
        for proposal in out.hypotheses:
            hypothesis = BlicketHypothesis.of(_objects(proposal.blickets), _objects(proposal.non_blickets), proposal.rule)
            if hypothesis.key() in known:
                continue
            known.add(hypothesis.key())
            result = check(hypothesis, experiments)
            unseen = sorted((hypothesis.blickets | hypothesis.non_blickets) - seen)
            why = [w for _, w in result.refutations] + [f"{o} is in no experiment" for o in unseen]
            checks.append({**result.as_dict(), "accepted": not why, "why": why})
            if not why:
                return checks, hypothesis.as_dict()
        return checks, None

    def statement(self, kept: dict[str, Any]) -> str:
        return BlicketHypothesis.of(kept["blickets"], kept["non_blickets"], kept["rule"]).statement()

    def apply(self, kept: dict[str, Any], inputs: dict[str, Any]) -> tuple[str, str]:
        hypothesis = BlicketHypothesis.of(kept["blickets"], kept["non_blickets"], kept["rule"])
        return answer(hypothesis, experiments_of(self.episodes), _objects(inputs["objects"])), hypothesis.statement()
