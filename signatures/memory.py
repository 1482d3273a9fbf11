"""Memory of past experience, for any task: episodes (M_episodic) and hypotheses (M_semantic).

An episode is one past observation (a text or an image) and, when it is kept apart, the
label or outcome it had. A plain string is an episode too: its text is the observation and
may state the outcome itself ("a yellow banana with brown spots: ripe"); an unlabelled
episode is shown to the LM without a ``label`` key. An episode may also carry its
``attributes`` (a structured description: attribute -> value) for programs that check rules
in code (``HDRGrounded``); they are never shown to the LM. ``WithMemory`` holds the two memory
inputs and the task-neutral instructions a ``Reasoner`` given its own signature uses.
"""

from __future__ import annotations

import dspy
from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

Observation = str | dspy.Image


class Episode(BaseModel):
    """One entry of episodic memory: an observation and, optionally, the label it was given."""

    observation: Observation = Field(description="the observation, as a text or an image")
    label: str | None = Field(default=None, description="the label or outcome it had; None when the text states it")
    attributes: dict[str, str] | None = Field(
        default=None, exclude=True, description="its structured description, for code only (never in a prompt)"
    )

    @model_serializer(mode="wrap")
    def _without_missing_label(self, handler: SerializerFunctionWrapHandler) -> dict:
        data = handler(self)
        if self.label is None:
            data.pop("label", None)
        return data


class WithMemory(dspy.Signature):
    """Answer using memory of past experience.

    The episodes are past observations, each with the label or outcome it had; the
    hypotheses are rules drawn from past experience. Decide what the memory implies for
    the inputs, then give the outputs."""

    episodes: list[Episode] = dspy.InputField(desc="episodic memory: past observations, each with its label or outcome")
    hypotheses: list[str] = dspy.InputField(desc="semantic memory: rules drawn from past experience")
