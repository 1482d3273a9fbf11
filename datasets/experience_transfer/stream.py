"""Experience-Transfer as a stream of text problems: the level's scenes to count in, its labelled episodes as seed problems.

    data = SceneStream(level=2)
    tests = data.items(seed=2026, size=40)         # scenes of make_level(2, seed=2026), in a seeded order
    seeds = data.seed_items(seed=2026, size=32)    # its labelled episodes: "normal" or "anomaly"
    data.counts(seed=2026)                         # (test scenes, labelled episodes) the level holds
    data.score(tests[0], "2")                      # 1.0 when the first integer of the answer is the scene's count

A stream program sees the episodes as solved seed problems ("which kind of object is this?", answered by
the episode's label), as HDR sees them as experience, and each test scene as a problem whose answer is a
count. Items are :class:`memreason.datasets.gym.GymItem`, so the stream protocol runs them unchanged.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np

from ..gym import GymItem
from .generate import LEVELS, ExperienceTransferLevel, make_level

__all__ = ["SceneStream", "SceneStreamError"]

_INTEGER = re.compile(r"-?\d+")


class SceneStreamError(ValueError):
    """A level the task does not have, or a config it does not take (one line at the command line)."""


class SceneStream:
    """One Experience-Transfer level (the paper's rule table) as stream items, drawn by seed."""

    def __init__(self, level: int, config: Mapping[str, Any] | None = None):
        if level not in LEVELS:
            raise SceneStreamError(f"Experience-Transfer has levels {', '.join(map(str, LEVELS))}, not {level!r}")
        if config:
            raise SceneStreamError(f"Experience-Transfer's stream takes no config, got {', '.join(sorted(config))}")
        self.level = level
        self._levels: dict[int, ExperienceTransferLevel] = {}

    def _made(self, seed: int) -> ExperienceTransferLevel:
        if seed not in self._levels:
            self._levels[seed] = make_level(self.level, seed=seed)
        return self._levels[seed]

    def counts(self, seed: int = 0) -> tuple[int, int]:
        """How many test scenes and seed problems (labelled episodes) the level made with ``seed`` holds."""
        made = self._made(seed)
        return len(made.test), len(made.episodes)

    def items(self, seed: int = 0, size: int = 40, *, prefix: str = "", distinct: bool = False) -> list[GymItem]:
        """``size`` test scenes of the level made with ``seed``, in an order drawn from ``seed`` (the level lists
        its scenes by count). Ids are the scenes' own; every scene is a distinct problem (``distinct`` is kept for
        the stream protocol's call)."""
        made = self._made(seed)
        if size > len(made.test):
            raise SceneStreamError(f"level {self.level} has {len(made.test)} test scenes; ask for at most that many")
        order = np.random.default_rng([seed, 1]).permutation(len(made.test))[:size]
        question = f"{made.query} Answer with a number."
        return [
            GymItem(f"{prefix}{made.test[i].id}", f"{made.test[i].text()}\n{question}", str(made.test[i].target)) for i in order
        ]

    def seed_items(self, seed: int = 0, size: int = 32, *, avoid: Sequence[GymItem] = ()) -> list[GymItem]:
        """``size`` of the level's labelled episodes (in an order drawn from ``seed``) as solved problems: which
        of the level's labels the object has (:class:`SceneStreamError` for more than the level holds). Episodes are
        single objects, never a test scene (``avoid`` is kept for the stream protocol's call)."""
        if size <= 0:
            return []
        made = self._made(seed)
        if size > len(made.episodes):
            raise SceneStreamError(f"level {self.level} has {len(made.episodes)} labelled episodes; ask for at most that many")
        labels = " or ".join(made.rules.labels)
        order = np.random.default_rng([seed, 2]).permutation(len(made.episodes))[:size]
        return [
            GymItem(f"s{made.episodes[i].id}", f"{made.episodes[i].text()}\nIs this object {labels}?", made.episodes[i].label)
            for i in order
        ]

    def score(self, item: GymItem, answer: str | None) -> float:
        """1.0 when the first integer in ``answer`` is the scene's count, else 0.0."""
        found = _INTEGER.search(answer or "")
        return float(found is not None and found.group() == item.answer)
