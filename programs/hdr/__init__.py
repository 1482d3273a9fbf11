"""Hypothesis-Driven Reasoning (HDR paper): its modules, its programs, and the paper's baselines.

    FactorExtractor, HypothesisGenerator, HypothesisVerifier    the consolidator's stages (Algorithm 1)
    MemoryConsolidator                                          K factor passes, N generate-verify rounds
    HDR                                                         memorize once, answer from episodes + hypotheses
    HDRGrounded, GroundedConsolidator, Rule                     rules checked by code (not the paper's)
    RuleLearner, learn_rules                                    a symbolic rule learner, no LM (a reference row)
    CheckedBlickets, CheckedListFunction                        inductive tasks: hypotheses checked in code (not the paper's)
    EpisodicMemory, SemanticOracle, EpisodicSemanticOracle      Table 2's memory baselines
    ReflexionIndividual, ReflexionAll                           Table 3's reflection baselines
    DirectHypothesis, TwoStage                                  Table 5's ablations
    parse_implications, HypothesisInterpreter, HypothesisJudge  reading hypotheses for hypothesis F1

The consolidator's prompts speak of any task unless given a ``task_description``
(:class:`memreason.signatures.TaskDescription`); the registry's Experience-Transfer programs pass
``EXPERIENCE_TRANSFER_TASK``.
"""

from .checked_blickets import CheckedBlickets
from .checked_list_function import CheckedListFunction
from .factor_extractor import FactorExtractor
from .grounded_consolidator import GroundedConsolidator
from .hdr import HDR
from .hdr_grounded import HDRGrounded
from .hypothesis_baselines import DirectHypothesis, TwoStage
from .hypothesis_generator import HypothesisGenerator
from .hypothesis_interpreter import HypothesisInterpreter
from .hypothesis_judge import HypothesisJudge
from .hypothesis_parser import parse_implications
from .hypothesis_verifier import HypothesisVerifier, Judgement
from .memory_consolidator import MemoryConsolidator
from .oracle_baselines import EpisodicMemory, EpisodicSemanticOracle, SemanticOracle
from .reflexion import ReflexionAll, ReflexionIndividual
from .rule_check import Rule
from .rule_learner import RuleLearner, learn_rules

__all__ = [
    "CheckedBlickets",
    "CheckedListFunction",
    "DirectHypothesis",
    "EpisodicMemory",
    "EpisodicSemanticOracle",
    "FactorExtractor",
    "GroundedConsolidator",
    "HDR",
    "HDRGrounded",
    "HypothesisGenerator",
    "HypothesisInterpreter",
    "HypothesisJudge",
    "HypothesisVerifier",
    "Judgement",
    "MemoryConsolidator",
    "ReflexionAll",
    "ReflexionIndividual",
    "Rule",
    "RuleLearner",
    "SemanticOracle",
    "TwoStage",
    "learn_rules",
    "parse_implications",
]
