"""DSPy modules and the programs composed from them, plus memory stores.

Programs never call ``dspy.configure``; their knobs are constructor arguments.
Names are imported lazily, so ``import programs.sandbox`` (used inside sandbox
worker processes) does not pull in DSPy.
"""

from importlib import import_module

_EXPORTS = {
    "MemoryProgram": ".memory_program",
    "FactorExtractor": ".factor_extractor",
    "HypothesisGenerator": ".hypothesis_generator",
    "HypothesisVerifier": ".hypothesis_verifier",
    "MemoryConsolidator": ".memory_consolidator",
    "HDR": ".hdr",
    "ReflexionIndividual": ".reflexion",
    "ReflexionAll": ".reflexion",
    "DirectHypothesis": ".hypothesis_baselines",
    "TwoStage": ".hypothesis_baselines",
    "HypothesisInterpreter": ".hypothesis_interpreter",
    "HypothesisJudge": ".hypothesis_judge",
    "parse_implications": ".hypothesis_parser",
    "EpisodicMemory": ".oracle_baselines",
    "SemanticOracle": ".oracle_baselines",
    "EpisodicSemanticOracle": ".oracle_baselines",
    "Reasoner": ".reasoner",
    "ArcSolver": ".arc_solver",
    "Attempt": ".arc_solver",
    "Step": ".arc_solver",
    "ArcProgram": ".arc_program",
    "Baseline": ".arc_program",
    "Feedback": ".arc_program",
    "ConceptMemory": ".concept_memory",
    "CheatsheetMemory": ".cheatsheet_memory",
    "MemoryFileError": ".memory_file",
    "load_memory": ".memory_file",
    "save_memory": ".memory_file",
    "empty_memory": ".memory_file",
    "ConceptAbstractor": ".concept_abstractor",
    "ConceptSelector": ".concept_selector",
    "ArcMemo": ".arcmemo",
    "ArcMemoOE": ".arcmemo",
    "ArcMemoPS": ".arcmemo",
    "Cheatsheet": ".cheatsheet",
    "PROGRAMS": ".registry",
    "ProgramSpec": ".registry",
    "build_program": ".registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'programs' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name], __name__), name)
