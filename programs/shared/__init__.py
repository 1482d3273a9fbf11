"""What HDR's and ArcMemo's programs share: the memory reader, memory as a DSPy parameter, and the plumbing.

Reasoner, ReaderKnobs, READER_KNOBS     the per-query reader of memory and its knobs (one definition)
MemoryProgram, ExperienceMemory         memorize once, answer from memory; episodes and hypotheses
MemoryParameter, MemoryWriters          memory saved with its program; writers kept from optimizers
StepModule, call, run, arun             one step function for forward and aforward
as_episodes, episode_to_json, ...       episodes as users give them and as programs save them
"""

from . import signature_pickling  # noqa: F401  (registers how run-time signatures pickle)
from .checks import some_episodes, texts, whole_number
from .episodes import as_episodes, episode_from_json, episode_to_json
from .experience_memory import ExperienceMemory
from .memory_parameter import MemoryParameter, fill_missing_memory
from .memory_program import Consolidation, MemoryProgram
from .memory_writers import MemoryWriters
from .normalise import distinct, normalise
from .per_object import nearest
from .reader_knobs import READER_KNOBS, ReaderKnobs
from .reasoner import MEMORY_FIELDS, Reasoner, memory_signature
from .steps import StepModule, Steps, arun, as_steps, call, run
from .usage import inside, usage

__all__ = [
    "Consolidation",
    "ExperienceMemory",
    "MEMORY_FIELDS",
    "MemoryParameter",
    "MemoryProgram",
    "MemoryWriters",
    "READER_KNOBS",
    "ReaderKnobs",
    "Reasoner",
    "StepModule",
    "Steps",
    "arun",
    "as_episodes",
    "as_steps",
    "call",
    "distinct",
    "episode_from_json",
    "episode_to_json",
    "fill_missing_memory",
    "inside",
    "memory_signature",
    "nearest",
    "normalise",
    "run",
    "some_episodes",
    "texts",
    "usage",
    "whole_number",
]
