"""Types and signatures for the Experience-Transfer task (HDR paper).

An observation is either a text description or an image (``dspy.Image``): the same
signatures serve both modalities (``Episode`` is any task's, from :mod:`.memory`). Inputs
are ordered so that what stays the same across test scenes (memory, query) comes before
what changes (the scene), which lets a local model reuse the shared prompt prefix.

``LabelObjects`` is the per-object form of the task (the paper's y = sum_j l_j): the model
labels each object of the scene and the count is computed in code (``Reasoner(per_object=True)``).
With a retrieval budget (``Reasoner(per_object=True, retrieve_k=k)``) the scene is first read
into its objects (``SceneObjects``) and each object is labelled in a call of its own
(``LabelObject``) against the k memory entries nearest to it.
"""

from __future__ import annotations

import dspy
from pydantic import BaseModel, Field

from .memory import Episode, Observation

__all__ = ["Episode", "LabelObject", "LabelObjects", "ObjectLabel", "Observation", "ReasonWithMemory", "SceneObjects"]


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


class ObjectLabel(BaseModel):
    """One object of a scene and the label given to it (``label`` is narrowed to the task's labels per call)."""

    object_and_background: str = Field(description="the object in a few words (its colour and shape) and the background it is on")
    evidence: str = Field(
        description="the memory that decides its label, copied: the rule or past episode that matches the object on every attribute"
    )
    label: str = Field(description="the label the memory implies for this object")


class LabelObjects(dspy.Signature):
    """Label every object in the test scene using memory of past experience.

    The episodes are labelled past observations of single objects; the hypotheses are
    rules, drawn from past experience, about which objects carry which label. Go through
    the scene's objects in order and, for each one, name it with the scene's background,
    copy the rule or past episode that matches it (the same value of every attribute
    it names), and give the label that memory implies for it: one of the labels given."""

    episodes: list[Episode] = dspy.InputField(desc="episodic memory: labelled past observations, one object each")
    hypotheses: list[str] = dspy.InputField(desc="semantic memory: rules about the labels drawn from past experience")
    labels: list[str] = dspy.InputField(desc="the labels an object may carry")
    scene: Observation = dspy.InputField(desc="the test scene")
    objects: list[ObjectLabel] = dspy.OutputField(desc="every object of the scene, in order, with its label")


class SceneObjects(dspy.Signature):
    """List the objects of the test scene, in order, and the background they are on."""

    scene: Observation = dspy.InputField(desc="the test scene")
    background: str = dspy.OutputField(desc="the colour of the scene's background")
    objects: list[str] = dspy.OutputField(desc="every object of the scene, in order, as its colour and shape (e.g. 'red square')")


class LabelObject(dspy.Signature):
    """Give one object of a test scene the label that memory of past experience implies for it.

    The episodes are labelled past observations of single objects; the hypotheses are
    rules, drawn from past experience, about which objects carry which label. They are the
    entries of memory closest to this object. Check every attribute of the object against
    each of them, and give the label the one that matches implies: one of the labels given."""

    episodes: list[Episode] = dspy.InputField(desc="episodic memory: labelled past observations, one object each")
    hypotheses: list[str] = dspy.InputField(desc="semantic memory: rules about the labels drawn from past experience")
    labels: list[str] = dspy.InputField(desc="the labels an object may carry")
    object: str = dspy.InputField(desc="the object and the background it is on")
    label: str = dspy.OutputField(desc="the label the memory implies for this object")
