"""memreason: memory-for-reasoning programs in DSPy (HDR and ArcMemo), with their benchmarks, metrics and tuning.

One package; the repository's top-level folders are its subpackages:

    memreason.signatures   typed dspy.Signature classes and pydantic types   (signatures/)
    memreason.programs     dspy.Module components, programs, memory stores   (programs/: hdr, arcmemo, shared)
    memreason.datasets     Experience-Transfer generator, ARC-AGI loading     (datasets/)
    memreason.eval         metrics, evaluation harness, CLI                   (eval/)
    memreason.optimize     Optuna studies and DSPy compilation                (optimize/)
    memreason.lm           the LM layer: embedded llama-server, fault guards, token meter (memreason/lm/)
    memreason.sandbox      isolated processes for generated programs, no DSPy (memreason/sandbox/)
    memreason.files        file safety: atomic writes, a full disk named, bounded JSON reads (memreason/files.py)

The main programs and modules are importable from here too::

    from memreason import HDR, HDRGrounded, ArcMemoPS, MemoryConsolidator, Reasoner, ConceptMemory

Importing this package is cheap: it imports none of its subpackages. A name above is imported
on first use (module ``__getattr__``), from ``memreason.programs`` or ``memreason.signatures``.
"""

import os
from importlib import import_module
from typing import Any

# LiteLLM downloads a price map at import unless told to use its bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# MLflow reports usage to its makers unless told not to; off unless the user turned it on.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

__version__ = "0.2.0"

_PROGRAMS = (
    # programs
    "HDR",
    "HDRGrounded",
    "ArcMemo",
    "ArcMemoOE",
    "ArcMemoPS",
    "Baseline",
    "Cheatsheet",
    "MemoryProgram",
    "ArcProgram",
    "PROGRAMS",
    "build_program",
    # modules and memory stores
    "FactorExtractor",
    "HypothesisGenerator",
    "HypothesisVerifier",
    "MemoryConsolidator",
    "GroundedConsolidator",
    "Reasoner",
    "ConceptAbstractor",
    "ConceptMemory",
    "ConceptSelector",
    "ExperienceMemory",
    "CheatsheetMemory",
)
_LAZY = {
    **dict.fromkeys(_PROGRAMS, "memreason.programs"),
    "ReaderKnobs": "memreason.programs.shared",
    "READER_KNOBS": "memreason.programs.shared",
    **dict.fromkeys(("Episode", "TaskDescription", "EXPERIENCE_TRANSFER_TASK", "NEUTRAL_TASK"), "memreason.signatures"),
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    """Import a top-level name's module on first use (``import memreason`` itself imports nothing)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'memreason' has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
