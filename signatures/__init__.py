"""The vocabulary of the library: pydantic types and typed ``dspy.Signature`` classes, nothing else."""

from .experience_transfer import Episode, ReasonWithMemory

__all__ = ["Episode", "ReasonWithMemory"]
