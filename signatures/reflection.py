"""Reflexion-style signatures (Shinn et al. 2023) for the HDR paper's reflection baselines.

r_ind,i = Reflect(e_i)             one reflection per episode
r_all   = Reflect(M_episodic)      one reflection over all episodes
"""

from __future__ import annotations

import dspy

from .experience_transfer import Episode


class ReflectOnEpisode(dspy.Signature):
    """Reflect on one labelled observation.

    Say what about the object may explain the label it was given, and state the
    lesson worth remembering when labelling objects in the future."""

    episode: Episode = dspy.InputField(desc="one labelled observation")
    reflection: str = dspy.OutputField(desc="a short verbal reflection and its lesson")


class ReflectOnEpisodes(dspy.Signature):
    """Reflect on all the labelled observations together.

    Summarise the patterns they show about which objects carry which label, and
    state the lessons worth remembering when labelling objects in the future."""

    episodes: list[Episode] = dspy.InputField(desc="episodic memory: labelled observations, one object each")
    reflection: str = dspy.OutputField(desc="a verbal summary of the patterns and lessons")
