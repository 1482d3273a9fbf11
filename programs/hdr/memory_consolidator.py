"""MC, HDR's two-stage memory consolidator (Algorithm 1, lines 1-18).

    Stage 1: F <- FactorExtractor(K)(M_episodic)
    Stage 2: H_0 <- {}
             for j = 1 to N:
                 H   <- HG(M_episodic, F, H_{j-1})
                 H_j <- {h in H | HV(h, M_episodic, F) = valid}
    M_semantic <- H_N

``resample=True`` (not the paper's) changes rounds 2..N for a small model that cannot
refine: given H_{j-1}, Qwen2.5-Coder-1.5B copies it and stops, and on its own it writes
rules in episode order until the first episode that repeats a combination, where it loops.
Each later round then asks the generator afresh (no previous hypotheses) with the episodes
in another order (round j's: ``random.Random(j)`` shuffled), so it reaches other
combinations before its loop, and the verifier judges H_{j-1} together with the new
proposals: a survivor stays until the verifier rejects it.

A round whose generator proposes nothing skips the verifier (there is nothing to
judge) and leaves H_j empty. Besides M_semantic it keeps a record of how it got there: the factor passes,
each round's proposals and survivors, and for every hypothesis ever proposed
the round it was born and every verdict it received.

The prompts speak of the task as ``task_description`` does (:class:`memreason.signatures.TaskDescription`):
any task by default; the registry's Experience-Transfer programs pass ``EXPERIENCE_TRANSFER_TASK``.
An empty list of episodes is refused before any call.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

import dspy

from memreason.signatures import NEUTRAL_TASK, TaskDescription

from ..shared.checks import some_episodes, whole_number
from ..shared.episodes import as_episodes
from ..shared.normalise import distinct, normalise
from ..shared.steps import StepModule, Steps, call
from .factor_extractor import FactorExtractor
from .hypothesis_generator import HypothesisGenerator
from .hypothesis_verifier import HypothesisVerifier, Judgement

__all__ = ["HypothesisHistory", "MemoryConsolidator", "reordered"]


@dataclass
class HypothesisHistory:
    """One hypothesis's life: the round it was first proposed and every verdict it got."""

    hypothesis: str
    born: int
    verdicts: list[dict[str, Any]] = field(default_factory=list)

    def add(self, round_: int, judgement: Judgement) -> None:
        self.verdicts.append({"round": round_, "verdict": judgement.verdict, "reason": judgement.reason})


class MemoryConsolidator(StepModule):
    """Build semantic memory from episodic memory: K factor passes, then N generate-verify rounds."""

    def __init__(self, K: int = 2, N: int = 3, resample: bool = False, *, task_description: TaskDescription = NEUTRAL_TASK):
        """
        Args:
            K: the most factor-extraction passes, a whole number (stage 1; 0 skips it: no factors).
            N: generate-verify rounds, a whole number (stage 2; at least 1). M_semantic is the last round's survivors.
            resample: rounds after the first propose afresh from reordered episodes, and the
                verifier judges the previous survivors with them (see the module's docstring).
            task_description: how the prompts speak of the task's episodes and attributes (default: any task).
        """
        super().__init__()
        self.K, self.N, self.resample = whole_number("K", K, minimum=0), whole_number("N", N, minimum=1), bool(resample)
        self.extract_factors = FactorExtractor(self.K, task_description=task_description)
        self.generate = HypothesisGenerator(task_description=task_description)
        self.verify = HypothesisVerifier(task_description=task_description)

    def steps(self, episodes) -> Steps[dspy.Prediction]:
        """``hypotheses``: M_semantic = H_N; ``factors``: F; ``record``: a JSON-able account of the run."""
        episodes = as_episodes(episodes)
        some_episodes(episodes, "MemoryConsolidator")
        stage1 = yield call(self.extract_factors, episodes=episodes)
        factors = stage1.factors
        hypotheses: list[str] = []
        rounds: list[dict[str, Any]] = []
        histories: dict[str, HypothesisHistory] = {}
        for j in range(1, self.N + 1):
            if self.resample and j > 1:  # afresh, from another order; the survivors go to the verifier as they are
                fresh = (yield call(self.generate, episodes=reordered(episodes, j), factors=factors)).hypotheses
                proposed = distinct([*hypotheses, *fresh])
            else:
                proposed = (yield call(self.generate, episodes=episodes, factors=factors, previous=hypotheses)).hypotheses
            checked = yield call(self.verify, episodes=episodes, factors=factors, hypotheses=proposed)
            hypotheses = checked.valid
            for judgement in checked.judgements:
                key = normalise(judgement.hypothesis)
                histories.setdefault(key, HypothesisHistory(judgement.hypothesis, born=j)).add(j, judgement)
            rounds.append({"round": j, "proposed": proposed, "valid": hypotheses})
        record = {
            "K": self.K,
            "N": self.N,
            "resample": self.resample,
            "factors": factors,
            "factor_passes": stage1.passes,
            "rounds": rounds,
            "hypothesis_history": [asdict(h) for h in histories.values()],
        }
        return dspy.Prediction(hypotheses=hypotheses, factors=factors, record=record)


def reordered(episodes: list, round_: int) -> list:
    """The episodes in round ``round_``'s order under ``resample``: shuffled by ``random.Random(round_)``."""
    shown = list(episodes)
    random.Random(round_).shuffle(shown)
    return shown
