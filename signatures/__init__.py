"""The vocabulary of the library: pydantic types and typed ``dspy.Signature`` classes, nothing else."""

from .experience_transfer import Episode, ReasonWithMemory
from .hypotheses import FactorExtraction, HypothesisGeneration, HypothesisVerification, Verdict
from .hypothesis_scoring import InterpretHypothesis, MatchHypothesis
from .reflection import ReflectOnEpisode, ReflectOnEpisodes

__all__ = [
    "Episode",
    "FactorExtraction",
    "HypothesisGeneration",
    "HypothesisVerification",
    "InterpretHypothesis",
    "MatchHypothesis",
    "ReasonWithMemory",
    "ReflectOnEpisode",
    "ReflectOnEpisodes",
    "Verdict",
]
