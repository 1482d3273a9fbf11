"""The language-model layer: the embedded model on a local llama-server, any DSPy/LiteLLM model, and a scripted engine for tests."""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy): DSPy and LiteLLM come with them
    from .config_error import LMConfigError
    from .resolve import EMBEDDED, LMChoice, resolve_lm
    from .scripted import ScriptedCall, ScriptedEngine
    from .server import SLOTS, EngineDied, LlamaServer, LlamaServerLM, ServerFailed, TextOnlyModel, local_server
    from .weights import EmbeddedModelMissing, embedded_model_available, embedded_model_path

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".config_error": "LMConfigError",
        ".resolve": "EMBEDDED LMChoice resolve_lm",
        ".scripted": "ScriptedCall ScriptedEngine",
        ".server": "SLOTS EngineDied LlamaServer LlamaServerLM ServerFailed TextOnlyModel local_server",
        ".weights": "EmbeddedModelMissing embedded_model_available embedded_model_path",
    },
)

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
