"""The memory baselines of the HDR paper's Table 2: raw episodes, oracle hypotheses, or both.

    Episodic memory:      M_semantic = {},    Input = M_episodic + T
    Semantic memory:      M_semantic = H_gt,  Input = M_semantic + T
    Episodic + Semantic:  M_semantic = H_gt,  Input = M_episodic + M_semantic + T

No LM call builds these memories: ``memorize`` stores the episodes and the oracle
hypotheses it is given.
"""

from __future__ import annotations

from memreason.signatures import Episode

from ..registry import SCENES, register_program
from ..shared.memory_program import Consolidation, MemoryProgram

__all__ = ["EpisodicMemory", "EpisodicSemanticOracle", "SemanticOracle"]


@register_program(
    name="episodic_cot",
    knobs={"cot": True},
    on_problems="signature",
    summary="all raw episodes, chain of thought (on an inductive task: the examples only, no memory built)",
)
@register_program(
    name="episodic",
    knobs={"cot": False},
    summary="all raw episodes in context",
)
class EpisodicMemory(MemoryProgram):
    """All raw episodes in context, no abstraction (knobs: :class:`MemoryProgram`'s)."""

    kind = SCENES

    semantic = False


@register_program(
    name="semantic_oracle_cot",
    knobs={"cot": True},
    on_problems="signature",
    needs=("has_oracle",),
    summary="oracle hypotheses, chain of thought (on ACRE: the true blickets)",
)
@register_program(
    name="semantic_oracle",
    knobs={"cot": False},
    summary="oracle hypotheses only",
)
class SemanticOracle(MemoryProgram):
    """Only the oracle hypotheses derived from the rule table (knobs: :class:`MemoryProgram`'s)."""

    kind = SCENES

    episodic = False

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Consolidation:
        return oracle_hypotheses


@register_program(
    name="episodic_semantic_oracle_cot",
    knobs={"cot": True},
    on_problems="signature",
    needs=("has_oracle",),
    summary="episodes and oracle hypotheses, chain of thought (on ACRE: the examples and the true blickets)",
)
@register_program(
    name="episodic_semantic_oracle",
    knobs={"cot": False},
    summary="episodes and oracle hypotheses",
)
class EpisodicSemanticOracle(SemanticOracle):
    """The raw episodes and the oracle hypotheses together (knobs: :class:`MemoryProgram`'s)."""

    episodic = True
