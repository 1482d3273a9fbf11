"""ArcMemo's two concept formats (paper section 3.2 and Appendix A.1), for any problem.

- Open-ended (OE): "under situation X, do Y" -- a ``situation`` and a ``suggestion``.
- Program synthesis (PS): a typed, parameterised type / structure / routine, with
  relevance cues and implementation notes. Parameters may be routines themselves
  (``Callable[...]``), which is how higher-order concepts are written.

Fields are plain strings and lists of strings so a small model can fill them
under a JSON grammar.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator


class OEConcept(BaseModel):
    """An open-ended lesson: in this situation, try this."""

    situation: str = Field(description="when the idea applies, in general terms (no problem ids, no exact values)")
    suggestion: str = Field(description="what to do in that situation")


class Parameter(BaseModel):
    """One parameter of a PS concept."""

    name: str = Field(description="a short identifier")
    type: str = Field(default="", description="its type, e.g. int, Color, list[Object], Callable[[Object], bool]")
    description: str = Field(default="", description="what it controls")


class PSConcept(BaseModel):
    """A program-synthesis concept: a reusable, typed, parameterised piece of a solution."""

    title: str = Field(description="a succinct label for the idea; reuse an existing title to revise that concept")
    description: str = Field(default="", description="its behaviour and role")
    kind: Literal["type", "structure", "routine"] = Field(default="routine", description="type, structure or routine")
    parameters: list[Parameter] = Field(default_factory=list, description="what parametrises it; routines may be parameters")
    output_typing: str = Field(default="", description="what it returns, so routines can plug into each other")
    relevance_cues: list[str] = Field(default_factory=list, description="signs in a problem that this concept applies")
    implementation_notes: list[str] = Field(default_factory=list, description="how to implement it, e.g. in Python")

    @field_validator("kind", mode="before")
    @classmethod
    def _plain_kind(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value
