"""Episodic and semantic memory (HDR's M_episodic and M_semantic) as a DSPy parameter.

    memory = ExperienceMemory()
    memory.set(episodes, hypotheses, consolidation={"factors": [...]})
    memory.episodes, memory.hypotheses      # None until set (an empty list is a memory)
    reasoner(**memory.recall(), question=...)   # the memory as a Reasoner's inputs
    program.save("p.json"); fresh.load("p.json")   # any program holding it keeps it

``consolidation`` is how the semantic memory was built (JSON-able: HDR's factors, rounds
and hypothesis histories). Episodes holding images are saved as the image's URL (a data
URI for an image from a file or PIL).
"""

from __future__ import annotations

from typing import Any, Iterable

from memreason.signatures import Episode

from .checks import texts
from .episodes import as_episodes, episode_from_json, episode_to_json
from .memory_parameter import MemoryParameter

__all__ = ["ExperienceMemory"]


class ExperienceMemory(MemoryParameter):
    """Episodes, the hypotheses drawn from them, and the record of how they were drawn."""

    def __init__(self):
        self.episodes: list[Episode] | None = None
        self.hypotheses: list[str] | None = None
        self.consolidation: dict[str, Any] = {}

    @property
    def is_set(self) -> bool:
        return self.episodes is not None and self.hypotheses is not None

    def set(self, episodes: Iterable, hypotheses: Iterable[str], consolidation: dict[str, Any] | None = None) -> None:
        """Replace the memory (episodes as :func:`as_episodes` takes them, hypotheses a list of strings).

        Raises ``TypeError`` for ``None`` or a single string in place of either list, before anything changes."""
        episodes, hypotheses = as_episodes(episodes), texts("hypotheses", hypotheses)
        self.episodes, self.hypotheses = episodes, hypotheses
        self.consolidation = dict(consolidation or {})

    def recall(self) -> dict[str, Any]:
        """``episodes`` and ``hypotheses``, as a :class:`Reasoner` takes them (``None`` until set: it then refuses)."""
        return {"episodes": self.episodes, "hypotheses": self.hypotheses}

    def dump_state(self, json_mode: bool = True) -> dict[str, Any] | None:
        if not self.is_set:
            return None
        return {
            "episodes": [episode_to_json(e) for e in self.episodes],
            "hypotheses": list(self.hypotheses),
            "consolidation": self.consolidation,
        }

    def load_state(self, state: dict[str, Any] | None) -> "ExperienceMemory":
        if state is not None:
            self.set([episode_from_json(e) for e in state["episodes"]], state["hypotheses"], state.get("consolidation"))
        return self
