"""The Dynamic Cheatsheet memory: one text, rewritten whole at every update."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CheatsheetMemory:
    text: str = ""
    sources: list[str] = field(default_factory=list)
    format: str = "cheatsheet"

    def __len__(self) -> int:
        return len(self.sources)

    def to_json(self) -> dict[str, Any]:
        return {"format": "cheatsheet", "text": self.text, "sources": list(self.sources)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CheatsheetMemory":
        text, sources = data.get("text"), data.get("sources", [])
        if not isinstance(text, str) or not isinstance(sources, list):
            raise ValueError("a cheatsheet needs 'text' (a string) and 'sources' (a list)")
        return cls(text, [str(s) for s in sources])
