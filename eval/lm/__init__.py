"""The language-model layer: embedded llama.cpp engine, any LiteLLM model, and a scripted engine for tests."""

from .resolve import EMBEDDED, LMChoice, LMConfigError, local_engine, resolve_lm
from .scripted import ScriptedCall, ScriptedEngine
from .weights import EmbeddedModelMissing, embedded_model_available, embedded_model_path

__all__ = [
    "EMBEDDED",
    "EmbeddedModelMissing",
    "LMChoice",
    "LMConfigError",
    "ScriptedCall",
    "ScriptedEngine",
    "embedded_model_available",
    "embedded_model_path",
    "local_engine",
    "resolve_lm",
]
