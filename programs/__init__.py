"""DSPy modules and the programs composed from them, plus memory stores, grouped by paper.

    memreason.programs.hdr       Hypothesis-Driven Reasoning: its modules, programs and baselines
    memreason.programs.arcmemo   ArcMemo: the ARC solver loop, concept memory, selection, abstraction
    memreason.programs.stream    memory programs over a stream of problems: few-shot, Reflexion, Dynamic Cheatsheet,
                                 ArcMemo's concepts, lessons, stored programs, ACE; run_stream for items of your own
    memreason.programs.shared    what both use: the memory reader and its knobs, memory as a DSPy
                                 parameter, frozen memory writers, one step function for forward/aforward
    memreason.programs.registry  the names users type (``python -m eval <name>``) and their factories;
                                 ``register_program``, the class decorator a program of your own registers with

Every public name of these is importable from here too (``from memreason.programs import HDR, FewShot``).
``Cheatsheet`` is ArcMemo's ARC cheatsheet (also ``ArcCheatsheet``); Dynamic Cheatsheet over a stream is
``CheatsheetCU`` / ``CheatsheetRS``.
Programs never call ``dspy.configure``; their knobs are constructor arguments.
"""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy): listing the programs imports none of them
    from .arcmemo import (
        ArcMemo,
        ArcMemoOE,
        ArcMemoPS,
        ArcProgram,
        ArcSolver,
        Attempt,
        Baseline,
        Cheatsheet,
        CheatsheetMemory,
        ConceptAbstractor,
        ConceptMemory,
        ConceptSelector,
        Feedback,
        MemoryFileError,
        Step,
        arc_problem,
        arc_problem_image,
        empty_memory,
        load_memory,
        save_memory,
        shipped_memories,
        use_arc_demos,
    )
    from .hdr import (
        HDR,
        CheckedBlickets,
        CheckedListFunction,
        DirectHypothesis,
        EpisodicMemory,
        EpisodicSemanticOracle,
        FactorExtractor,
        GroundedConsolidator,
        HDRGrounded,
        HypothesisGenerator,
        HypothesisInterpreter,
        HypothesisJudge,
        HypothesisVerifier,
        Judgement,
        MemoryConsolidator,
        ReflexionAll,
        ReflexionIndividual,
        Rule,
        RuleLearner,
        SemanticOracle,
        TwoStage,
        learn_rules,
        parse_implications,
    )
    from .registry import PROGRAMS, ProgramSpec, build_program, load_programs, register_program
    from .shared import (
        ExperienceMemory,
        MemoryParameter,
        MemoryProgram,
        Reasoner,
        as_episodes,
        episode_from_json,
        episode_to_json,
        memory_signature,
    )
    from .stream import (
        Ace,
        CheatsheetCU,
        CheatsheetRS,
        ConceptStream,
        FailureMemory,
        FewShot,
        Lesson,
        ReflexionStream,
        StoredPrograms,
        StreamBaseline,
        StreamProgram,
        run_stream,
    )

    ArcCheatsheet = Cheatsheet

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".arcmemo": (
            "ArcMemo ArcMemoOE ArcMemoPS ArcProgram ArcSolver Attempt Baseline Cheatsheet CheatsheetMemory "
            "ConceptAbstractor ConceptMemory ConceptSelector Feedback MemoryFileError Step arc_problem "
            "arc_problem_image empty_memory load_memory save_memory shipped_memories use_arc_demos"
        ),
        ".hdr": (
            "HDR CheckedBlickets CheckedListFunction DirectHypothesis EpisodicMemory EpisodicSemanticOracle "
            "FactorExtractor GroundedConsolidator HDRGrounded HypothesisGenerator HypothesisInterpreter "
            "HypothesisJudge HypothesisVerifier Judgement MemoryConsolidator ReflexionAll ReflexionIndividual "
            "Rule RuleLearner SemanticOracle TwoStage learn_rules parse_implications"
        ),
        ".registry": "PROGRAMS ProgramSpec build_program load_programs register_program",
        ".shared": (
            "ExperienceMemory MemoryParameter MemoryProgram Reasoner as_episodes episode_from_json "
            "episode_to_json memory_signature"
        ),
        ".stream": (
            "Ace CheatsheetCU CheatsheetRS ConceptStream FailureMemory FewShot Lesson ReflexionStream "
            "StoredPrograms StreamBaseline StreamProgram run_stream"
        ),
    },
    aliases={"ArcCheatsheet": "Cheatsheet"},  # the name that says which cheatsheet it is
)

__all__ = [
    "Ace",
    "ArcCheatsheet",
    "CheatsheetCU",
    "CheatsheetRS",
    "ConceptStream",
    "FailureMemory",
    "FewShot",
    "Lesson",
    "ReflexionStream",
    "StoredPrograms",
    "StreamBaseline",
    "StreamProgram",
    "run_stream",
    "ArcMemo",
    "ArcMemoOE",
    "ArcMemoPS",
    "ArcProgram",
    "ArcSolver",
    "Attempt",
    "Baseline",
    "Cheatsheet",
    "CheatsheetMemory",
    "CheckedBlickets",
    "CheckedListFunction",
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
    "RuleLearner",
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
    "learn_rules",
    "load_memory",
    "load_programs",
    "memory_signature",
    "parse_implications",
    "register_program",
    "save_memory",
    "shipped_memories",
    "use_arc_demos",
]
