"""The names users type (``python -m eval <name>``) and the programs they build."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import dspy

from .hdr import HDR
from .hypothesis_baselines import DirectHypothesis, TwoStage
from .oracle_baselines import EpisodicMemory, EpisodicSemanticOracle, SemanticOracle
from .reflexion import ReflexionAll, ReflexionIndividual


@dataclass(frozen=True)
class ProgramSpec:
    name: str
    task: str  # "experience_transfer" or "arc"
    build: Callable[..., dspy.Module]
    summary: str


def _spec(name: str, task: str, cls: type, summary: str, **fixed: Any) -> ProgramSpec:
    return ProgramSpec(name, task, lambda **knobs: cls(**{**fixed, **knobs}), summary)


PROGRAMS: dict[str, ProgramSpec] = {
    spec.name: spec
    for spec in [
        _spec("episodic", "experience_transfer", EpisodicMemory, "all raw episodes in context", cot=False),
        _spec("episodic_cot", "experience_transfer", EpisodicMemory, "all raw episodes, chain of thought", cot=True),
        _spec("semantic_oracle", "experience_transfer", SemanticOracle, "oracle hypotheses only", cot=False),
        _spec("semantic_oracle_cot", "experience_transfer", SemanticOracle, "oracle hypotheses, chain of thought", cot=True),
        _spec("episodic_semantic_oracle", "experience_transfer", EpisodicSemanticOracle, "episodes and oracle hypotheses", cot=False),
        _spec("episodic_semantic_oracle_cot", "experience_transfer", EpisodicSemanticOracle, "episodes and oracle hypotheses, chain of thought", cot=True),
        _spec("hdr", "experience_transfer", HDR, "episodes and verified hypotheses (knobs: K, N, cot)"),
        _spec("reflexion_individual", "experience_transfer", ReflexionIndividual, "episodes and one reflection per episode (knob: cot)"),
        _spec("reflexion_all", "experience_transfer", ReflexionAll, "episodes and one reflection on all episodes (knob: cot)"),
        _spec("direct_hypothesis", "experience_transfer", DirectHypothesis, "episodes and unverified hypotheses, no factors (knob: cot)"),
        _spec("two_stage", "experience_transfer", TwoStage, "episodes, factors, then unverified hypotheses (knobs: K, cot)"),
    ]
}


def build_program(name: str, **knobs: Any) -> dspy.Module:
    """Build the registered program ``name`` with its knobs (constructor arguments)."""
    if name not in PROGRAMS:
        raise KeyError(f"unknown program {name!r}; known: {', '.join(PROGRAMS)}")
    return PROGRAMS[name].build(**knobs)
