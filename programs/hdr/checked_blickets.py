"""The checked program on ACRE: blicket hypotheses proposed by the LM, checked in code against every experiment.

    for round in 1..N:
        H <- Propose(objects, experiments, refuted)   # the blickets, and the rule (any | all)
        for h in H, new:
            h.non_blickets <- what h's rule makes of the experiments   # any: the objects of unlit ones
            check(h, experiments)                     # blicket_check: refuted with named experiments
            refuted under any: narrow(h)              # drop the blickets it refutes, check again
        stop at the first h that passes, or when a round proposes nothing new
    y = answer(h, experiments, objects)               # in code; no hypothesis kept: the reasoner answers

The LM names the blickets and the rule; which objects are not blickets follows from the rule
and the experiments (under ``any`` every object of an experiment whose light stayed off; under
``all`` none matters), so code completes that part. A refuted ``any`` hypothesis is narrowed in
code by its counterexamples: the blickets it names that an unlit experiment holds, or that no
lit experiment shows to be one, are dropped, and what is left is checked too, its check
recording what was dropped (``narrowed``). Narrowing only drops the model's claims; a blicket
the model did not name is never added. Objects are named as the experiments name them
(``red metal sphere``); a hypothesis naming an object no experiment holds is refuted too. An
episode's observation is its objects joined by ``", "`` and its label the light's state, as
:mod:`memreason.datasets.inductive.acre` makes them.
"""

from __future__ import annotations

from typing import Any

import dspy

from memreason.signatures import AnswerDetector, Episode, ProposeBlicketHypotheses, Refuted

from ..shared.steps import Steps, call
from .blicket_check import BlicketHypothesis, Experiment, answer, check, shown
from .checked_program import CheckedProgram

__all__ = ["CheckedBlickets", "completed", "experiments_of", "narrow"]


def experiments_of(episodes: list[Episode]) -> list[Experiment]:
    """The episodes as experiments, numbered from 1."""
    return [
        Experiment(i + 1, _objects(str(e.observation).split(",")), str(e.label).strip().lower()) for i, e in enumerate(episodes)
    ]


def completed(blickets: tuple[str, ...], rule: str, experiments: list[Experiment]) -> BlicketHypothesis:
    """The model's blickets and rule, with the non-blickets the rule makes of the experiments (``any``: every object
    of an unlit experiment; ``all``: none)."""
    non = {o for e in experiments if e.light == "off" for o in e.objects} if rule == "any" else set()
    return BlicketHypothesis.of(blickets, non, rule)


def narrow(hypothesis: BlicketHypothesis, experiments: list[Experiment]) -> tuple[BlicketHypothesis, list[str]] | None:
    """An ``any`` hypothesis without the blickets the experiments refute (held by an unlit experiment, or shown by no
    lit one as the only object that may have lit it), and what was dropped; None when nothing would be."""
    if hypothesis.rule != "any":
        return None
    non = hypothesis.non_blickets
    dropped = sorted(b for b in hypothesis.blickets if b in non or not shown(b, non, experiments))
    if not dropped:
        return None
    return BlicketHypothesis.of(hypothesis.blickets - set(dropped), non, "any"), dropped


def _objects(names) -> tuple[str, ...]:
    return tuple(" ".join(str(n).lower().split()) for n in names if str(n).strip())


class CheckedBlickets(CheckedProgram):
    """ACRE: the blicket hypothesis that no experiment refutes, applied in code."""

    answer_signature = AnswerDetector

    def __init__(self, **knobs: Any):
        """
        Args:
            **knobs: :class:`CheckedProgram`'s (``N``, ``samples``, ...) and the fallback reasoner's.
        """
        super().__init__(**knobs)
        self.propose = dspy.Predict(ProposeBlicketHypotheses)

    def checked(self, episodes: list[Episode], refuted: list[Refuted], known: set[Any]) -> Steps[tuple[list, Any]]:
        experiments = experiments_of(episodes)
        objects = list(dict.fromkeys(o for e in experiments for o in e.objects))
        shown = [Episode(observation=", ".join(e.objects), label=e.light) for e in experiments]
        out = yield call(self.propose, objects=objects, experiments=shown, refuted=refuted, **self.proposal_config(len(known)))
        seen = set(objects)
        checks = []
        for proposal in (h for hypotheses in self.proposals(out, "hypotheses") for h in hypotheses):
            hypothesis = completed(_objects(proposal.blickets), proposal.rule, experiments)
            narrowed = narrow(hypothesis, experiments)
            for h, dropped in [(hypothesis, None)] + ([narrowed] if narrowed else []):
                if h.key() in known:
                    continue
                known.add(h.key())
                result = check(h, experiments)
                unseen = sorted((h.blickets | h.non_blickets) - seen)
                why = [w for _, w in result.refutations] + [f"{o} is in no experiment" for o in unseen]
                checks.append({**result.as_dict(), "accepted": not why, "why": why, "narrowed": dropped})
                if not why:
                    return checks, h.as_dict()
        return checks, None

    def statement(self, kept: dict[str, Any]) -> str:
        return BlicketHypothesis.of(kept["blickets"], kept["non_blickets"], kept["rule"]).statement()

    def apply(self, kept: dict[str, Any], inputs: dict[str, Any]) -> tuple[str, str]:
        hypothesis = BlicketHypothesis.of(kept["blickets"], kept["non_blickets"], kept["rule"])
        return answer(hypothesis, experiments_of(self.episodes), _objects(inputs["objects"])), hypothesis.statement()
