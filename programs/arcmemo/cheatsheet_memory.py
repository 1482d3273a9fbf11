"""The Dynamic Cheatsheet memory: one text, rewritten whole at every update.

A DSPy parameter (:mod:`memreason.programs.shared.memory_parameter`): saved and loaded with the
program that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..shared.memory_parameter import MemoryParameter

__all__ = ["CheatsheetMemory"]


@dataclass
class CheatsheetMemory(MemoryParameter):
    text: str = ""
    sources: list[str] = field(default_factory=list)
    format: str = "cheatsheet"

    def __len__(self) -> int:
        return len(self.sources)

    def to_json(self) -> dict[str, Any]:
        return {"format": "cheatsheet", "text": self.text, "sources": list(self.sources)}

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        return self.to_json()

    def load_state(self, state: dict[str, Any] | None) -> "CheatsheetMemory":
        """Take the text and sources of ``state`` (a :meth:`to_json`; ``None`` keeps these)."""
        if state is not None:
            loaded = CheatsheetMemory.from_json(state)
            self.text, self.sources = loaded.text, loaded.sources
        return self

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CheatsheetMemory":
        text, sources = data.get("text"), data.get("sources", [])
        if not isinstance(text, str) or not isinstance(sources, list):
            raise ValueError("a cheatsheet needs 'text' (a string) and 'sources' (a list)")
        return cls(text, [str(s) for s in sources])
