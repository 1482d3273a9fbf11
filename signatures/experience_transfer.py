"""Types and signatures for the Experience-Transfer task (HDR paper).

An observation is either a text description or an image (``dspy.Image``): the same
signatures serve both modalities (``Episode`` is any task's, from :mod:`.memory`). Inputs
are ordered so that what stays the same across test scenes (memory, query) comes before
what changes (the scene), which lets a local model reuse the shared prompt prefix.
"""

from __future__ import annotations

import dspy

from .memory import Episode, Observation

__all__ = ["Episode", "Observation", "ReasonWithMemory"]


class ReasonWithMemory(dspy.Signature):
    """Answer the query about the test scene using memory of past experience.

    The episodes are labelled past observations of single objects; the hypotheses are
    rules, drawn from past experience, about which objects carry which label. Decide the label of every
    object in the scene from the memory, then answer the query with a whole number."""

    episodes: list[Episode] = dspy.InputField(desc="episodic memory: labelled past observations, one object each")
    hypotheses: list[str] = dspy.InputField(desc="semantic memory: rules about the labels drawn from past experience")
    query: str = dspy.InputField()
    scene: Observation = dspy.InputField(desc="the test scene")
    count: int = dspy.OutputField(desc="the answer to the query, a whole number")
