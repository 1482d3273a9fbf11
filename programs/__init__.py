"""DSPy modules and the programs composed from them, plus memory stores.

Programs never call ``dspy.configure``; their knobs are constructor arguments.
"""

from .abstraction_demos import use_arc_demos
from .arc_problem import arc_problem, arc_problem_image
from .arc_program import ArcProgram, Baseline, Feedback
from .arc_solver import ArcSolver, Attempt, Step
from .arcmemo import ArcMemo, ArcMemoOE, ArcMemoPS
from .cheatsheet import Cheatsheet
from .cheatsheet_memory import CheatsheetMemory
from .concept_abstractor import ConceptAbstractor
from .concept_memory import ConceptMemory
from .concept_selector import ConceptSelector
from .episodes import as_episodes, episode_from_json, episode_to_json
from .experience_memory import ExperienceMemory
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
from .memory_file import (MemoryFileError, empty_memory, load_memory,
                          save_memory)
from .memory_parameter import MemoryParameter
from .memory_program import MemoryProgram
from .oracle_baselines import (EpisodicMemory, EpisodicSemanticOracle,
                               SemanticOracle)
from .reasoner import Reasoner, memory_signature
from .reflexion import ReflexionAll, ReflexionIndividual
from .registry import PROGRAMS, ProgramSpec, build_program
from .rule_check import Rule

__all__ = [
    "ArcMemo",
    "ArcMemoOE",
    "ArcMemoPS",
    "ArcProgram",
    "ArcSolver",
    "Attempt",
    "Baseline",
    "Cheatsheet",
    "CheatsheetMemory",
    "ConceptAbstractor",
    "ConceptMemory",
    "ConceptSelector",
    "DirectHypothesis",
    "EpisodicMemory",
    "EpisodicSemanticOracle",
    "ExperienceMemory",
    "FactorExtractor",
    "Feedback",
    "GroundedConsolidator",
    "HDR",
    "HDRGrounded",
    "HypothesisGenerator",
    "HypothesisInterpreter",
    "HypothesisJudge",
    "HypothesisVerifier",
    "Judgement",
    "MemoryConsolidator",
    "MemoryFileError",
    "MemoryParameter",
    "MemoryProgram",
    "PROGRAMS",
    "ProgramSpec",
    "Reasoner",
    "Rule",
    "ReflexionAll",
    "ReflexionIndividual",
    "SemanticOracle",
    "Step",
    "TwoStage",
    "arc_problem",
    "arc_problem_image",
    "as_episodes",
    "build_program",
    "empty_memory",
    "episode_from_json",
    "episode_to_json",
    "load_memory",
    "memory_signature",
    "parse_implications",
    "save_memory",
    "use_arc_demos",
]
