"""The vocabulary of the library: pydantic types and typed ``dspy.Signature`` classes, nothing else."""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy): DSPy and pydantic come with them
    from .arc_solver import RetryArcPuzzle, SolveArcPuzzle
    from .cheatsheet import CurateCheatsheet
    from .concept_abstraction import AbstractOEConcepts, AbstractPSConcepts, DeriveSolutionTrace, WritePseudocode
    from .concept_selection import CaptionProblem, ReselectConcepts, ReselectOEConcepts, SelectOEConcepts, SelectPSConcepts
    from .concepts import OEConcept, Parameter, PSConcept
    from .experience_transfer import LabelObject, LabelObjects, ObjectLabel, ReasonWithMemory, SceneObjects
    from .grounded_hypotheses import (
        EpisodeGroup,
        GeneralFirstRuleGeneration,
        GroundedHypothesisGeneration,
        GroundedRule,
        LabelObjectByRules,
        PerceiveAttributes,
        Rejection,
    )
    from .hypotheses import FactorExtraction, HypothesisGeneration, HypothesisVerification, Verdict
    from .hypothesis_scoring import InterpretHypothesis, MatchHypothesis
    from .implications import NotLabel, OtherThan
    from .inductive import (
        ACRE_TASK,
        LIST_FUNCTIONS_TASK,
        AnswerDetector,
        ApplyListFunction,
        BlicketHypothesis,
        ProposeBlicketHypotheses,
        ProposeListFunction,
        Refuted,
    )
    from .memory import Episode, Observation, WithMemory
    from .reflection import ReflectOnEpisode, ReflectOnEpisodes
    from .task_description import EXPERIENCE_TRANSFER_TASK, NEUTRAL_TASK, TaskDescription

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".arc_solver": "RetryArcPuzzle SolveArcPuzzle",
        ".cheatsheet": "CurateCheatsheet",
        ".concept_abstraction": "AbstractOEConcepts AbstractPSConcepts DeriveSolutionTrace WritePseudocode",
        ".concept_selection": "CaptionProblem ReselectConcepts ReselectOEConcepts SelectOEConcepts SelectPSConcepts",
        ".concepts": "OEConcept Parameter PSConcept",
        ".experience_transfer": "LabelObject LabelObjects ObjectLabel ReasonWithMemory SceneObjects",
        ".grounded_hypotheses": "EpisodeGroup GeneralFirstRuleGeneration GroundedHypothesisGeneration GroundedRule LabelObjectByRules PerceiveAttributes Rejection",
        ".hypotheses": "FactorExtraction HypothesisGeneration HypothesisVerification Verdict",
        ".hypothesis_scoring": "InterpretHypothesis MatchHypothesis",
        ".implications": "NotLabel OtherThan",
        ".inductive": (
            "ACRE_TASK LIST_FUNCTIONS_TASK AnswerDetector ApplyListFunction BlicketHypothesis "
            "ProposeBlicketHypotheses ProposeListFunction Refuted"
        ),
        ".memory": "Episode Observation WithMemory",
        ".reflection": "ReflectOnEpisode ReflectOnEpisodes",
        ".task_description": "EXPERIENCE_TRANSFER_TASK NEUTRAL_TASK TaskDescription",
    },
)

__all__ = [
    "ACRE_TASK",
    "AnswerDetector",
    "ApplyListFunction",
    "BlicketHypothesis",
    "LIST_FUNCTIONS_TASK",
    "ProposeBlicketHypotheses",
    "ProposeListFunction",
    "Refuted",
    "AbstractOEConcepts",
    "AbstractPSConcepts",
    "CaptionProblem",
    "CurateCheatsheet",
    "DeriveSolutionTrace",
    "EXPERIENCE_TRANSFER_TASK",
    "Episode",
    "EpisodeGroup",
    "FactorExtraction",
    "HypothesisGeneration",
    "HypothesisVerification",
    "GroundedHypothesisGeneration",
    "GeneralFirstRuleGeneration",
    "GroundedRule",
    "InterpretHypothesis",
    "LabelObject",
    "LabelObjectByRules",
    "LabelObjects",
    "MatchHypothesis",
    "NEUTRAL_TASK",
    "NotLabel",
    "OEConcept",
    "ObjectLabel",
    "OtherThan",
    "Observation",
    "PSConcept",
    "Parameter",
    "PerceiveAttributes",
    "ReasonWithMemory",
    "SceneObjects",
    "ReflectOnEpisode",
    "ReflectOnEpisodes",
    "Rejection",
    "ReselectConcepts",
    "ReselectOEConcepts",
    "RetryArcPuzzle",
    "SelectOEConcepts",
    "SelectPSConcepts",
    "SolveArcPuzzle",
    "TaskDescription",
    "Verdict",
    "WithMemory",
    "WritePseudocode",
]
