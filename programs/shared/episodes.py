"""Episodes at the module boundary: what users pass in, and what a saved program holds.

    as_episodes(["a yellow banana with brown spots: ripe", {"observation": "...", "label": "unripe"}])
    episode_to_json(episode) / episode_from_json(data)     # images as their URL (a data URI)

Every module that reads episodes takes :class:`Episode` objects, plain strings (the
observation, no separate label), dicts with ``observation`` (and ``label``), or bare
images, and turns them into ``Episode`` objects before any LM call, so DSPy sees the types
its signatures declare.
"""

from __future__ import annotations

from typing import Any, Iterable

import dspy

from memreason.signatures import Episode

__all__ = ["as_episodes", "episode_from_json", "episode_to_json"]


def as_episodes(items: Iterable[Episode | str | dict[str, Any] | dspy.Image]) -> list[Episode]:
    """``items`` as a list of episodes; raises ``TypeError`` for anything else, naming the item."""
    if items is None:
        raise TypeError("episodes must be a list, got None")
    if isinstance(items, (str, dict, Episode, dspy.Image)):
        raise TypeError(f"episodes must be a list, got one {type(items).__name__}")
    return [_episode(item, i) for i, item in enumerate(items)]


def _episode(item: Any, index: int) -> Episode:
    if isinstance(item, Episode):
        return item
    if isinstance(item, (str, dspy.Image)):
        return Episode(observation=item)
    if isinstance(item, dict):
        return Episode.model_validate(item)
    raise TypeError(f"episode {index} is a {type(item).__name__}; give an Episode, a string, a dict or a dspy.Image")


def episode_to_json(episode: Episode) -> dict[str, Any]:
    """A JSON-able episode: a text observation as it is, an image as ``{"image": url}``."""
    observation = episode.observation
    image = isinstance(observation, dspy.Image)
    data: dict[str, Any] = {"observation": {"image": observation.url} if image else observation}
    if episode.label is not None:
        data["label"] = episode.label
    if episode.attributes is not None:
        data["attributes"] = dict(episode.attributes)
    return data


def episode_from_json(data: dict[str, Any]) -> Episode:
    """The episode :func:`episode_to_json` wrote."""
    observation = data["observation"]
    if isinstance(observation, dict):
        observation = dspy.Image(url=observation["image"])
    return Episode(observation=observation, label=data.get("label"), attributes=data.get("attributes"))
