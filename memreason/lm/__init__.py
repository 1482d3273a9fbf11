"""The language-model layer: the embedded model on a local llama-server, any DSPy/LiteLLM model, and a scripted engine for tests."""

from .resolve import EMBEDDED, LMChoice, LMConfigError, resolve_lm
from .scripted import ScriptedCall, ScriptedEngine
from .server import SLOTS, EngineDied, LlamaServer, LlamaServerLM, ServerFailed, TextOnlyModel, local_server
from .weights import EmbeddedModelMissing, embedded_model_available, embedded_model_path

__all__ = [
    "EMBEDDED",
    "SLOTS",
    "EmbeddedModelMissing",
    "EngineDied",
    "LlamaServer",
    "LlamaServerLM",
    "LMChoice",
    "LMConfigError",
    "ScriptedCall",
    "ScriptedEngine",
    "ServerFailed",
    "TextOnlyModel",
    "embedded_model_available",
    "embedded_model_path",
    "local_server",
    "resolve_lm",
]
