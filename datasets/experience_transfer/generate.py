"""Seeded synthesis of Experience-Transfer episodes and test scenes (HDR paper, "Data Synthesis").

Episodes show one object on a 200x100 canvas with its label; test scenes show 2, 3
or 4 non-overlapping objects on one background, and the target is how many of them
carry the table's ``count_label``. Every item has the PIL image and a structured
description (plus its text rendering), so programs can run on either modality.

Episodes and test scenes draw from independent random streams of one seed, so
changing the number of episodes never changes the test set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .render import CANVAS, PlacedObject, draw
from .rules import Combination, OracleRule, RuleTable, RuleTableError

if TYPE_CHECKING:  # numpy and PIL are imported where a level is generated (the levels are named without them)
    import numpy as np
    from PIL import Image

LEVELS = (1, 2, 3)
SIZE_RANGE = (25, 50)  # inclusive, pixels
OBJECT_COUNTS = (2, 3, 4)


@dataclass
class Episode:
    """One labelled observation: a single object on a canvas."""

    id: str
    background: str
    object: PlacedObject
    label: str
    image: Image.Image = field(repr=False)

    @property
    def description(self) -> dict[str, Any]:
        return {"background": self.background, "object": self.object.describe()}

    def text(self) -> str:
        return f"A {_describe(self.object)}, on a {self.background} background."

    def attributes(self) -> dict[str, str]:
        """The categorical part of the description (size and position are measurements, left out)."""
        return {"shape": self.object.shape, "color": self.object.color, "background": self.background}


@dataclass
class Scene:
    """A test scene: several objects on one background; ``target`` counts the counted label."""

    id: str
    background: str
    objects: list[PlacedObject]
    labels: list[str]
    target: int
    image: Image.Image = field(repr=False)

    @property
    def description(self) -> dict[str, Any]:
        return {"background": self.background, "objects": [o.describe() for o in self.objects]}

    def text(self) -> str:
        parts = "; ".join(f"({i}) a {_describe(o)}" for i, o in enumerate(self.objects, 1))
        return f"A {self.background} background with {len(self.objects)} objects: {parts}."


@dataclass
class ExperienceTransferLevel:
    """Everything one level of the task needs: episodes, test scenes, the rules and their oracle."""

    level: int
    seed: int
    rules: RuleTable
    episodes: list[Episode]
    test: list[Scene]
    visible: list[Combination]
    masked: list[Combination]
    oracle: list[OracleRule]
    oracle_hypotheses: list[str]

    @property
    def query(self) -> str:
        return f"Count the total number of {self.rules.count_label} objects in the scene."

    def manifest(self) -> dict[str, Any]:
        """A JSON-able summary of the level (no pixels)."""
        return {
            "level": self.level,
            "seed": self.seed,
            "query": self.query,
            "rules": self.rules.to_dict(),
            "masked": [self.rules.as_dict(c) for c in self.masked],
            "oracle_hypotheses": self.oracle_hypotheses,
            "episodes": [{"id": e.id, **e.description, "label": e.label, "text": e.text()} for e in self.episodes],
            "test": [{"id": s.id, **s.description, "labels": s.labels, "target": s.target, "text": s.text()} for s in self.test],
        }


def make_level(
    level: int,
    *,
    seed: int = 0,
    rules: RuleTable | None = None,
    mask: list[dict[str, str]] | None = None,
    episodes_per_combination: int = 2,
    scenes_per_count: int = 50,
    object_counts: tuple[int, ...] = OBJECT_COUNTS,
) -> ExperienceTransferLevel:
    """Build one level of the Experience-Transfer task.

    Level 1 shows only the table's first background; Level 2 every background;
    Level 3 is Level 2 with the mask's combinations hidden from the episodes but
    still present in test scenes. ``mask`` overrides the table's ``level3_mask``.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if episodes_per_combination < 1 or scenes_per_count < 0:
        raise ValueError("episodes_per_combination must be >= 1 and scenes_per_count >= 0")
    rules = rules or RuleTable.paper()
    backgrounds = rules.backgrounds[:1] if level == 1 else rules.backgrounds
    in_level = rules.combinations(backgrounds)
    masked = list(rules.parse_mask(mask) if mask is not None else rules.level3_mask) if level == 3 else []
    if level == 3 and not masked:
        raise RuleTableError("Level 3 needs a mask: give the table a 'level3_mask' or pass mask=")
    visible = [c for c in in_level if c not in masked]

    import numpy as np

    episode_rng, scene_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    episodes = _episodes(rules, visible, episodes_per_combination, episode_rng, level)
    test = _scenes(rules, backgrounds, in_level, object_counts, scenes_per_count, scene_rng, level)
    oracle = rules.oracle_rules(visible)
    hypotheses = [rule.text() for rule in oracle]
    if len(backgrounds) == 2 and rules.flips_with_background():
        hypotheses.append(rules.flip_statement())
    return ExperienceTransferLevel(level, seed, rules, episodes, test, visible, masked, oracle, hypotheses)


def _describe(obj: PlacedObject) -> str:
    cx, cy = obj.x + obj.size // 2, obj.y + obj.size // 2
    return f"{obj.color} {obj.shape} of size {obj.size} px centred at (x={cx}, y={cy})"


def _random_object(combo: dict[str, str], rng: np.random.Generator) -> PlacedObject:
    size = int(rng.integers(SIZE_RANGE[0], SIZE_RANGE[1] + 1))
    x = int(rng.integers(0, CANVAS[0] - size + 1))
    y = int(rng.integers(0, CANVAS[1] - size + 1))
    return PlacedObject(combo["shape"], combo["color"], size, x, y)


def _episodes(rules: RuleTable, visible: list[Combination], per: int, rng: np.random.Generator, level: int) -> list[Episode]:
    combos = [c for c in visible for _ in range(per)]
    order = rng.permutation(len(combos))  # the paper feeds episodes in a seeded random order
    episodes = []
    for i, k in enumerate(order):
        combo = combos[k]
        attrs = rules.as_dict(combo)
        background = rules.background_of(combo)
        obj = _random_object(attrs, rng)
        episodes.append(Episode(f"L{level}-e{i:03d}", background, obj, rules.label_of(combo), draw([obj], background)))
    return episodes


def _place(combos: list[dict[str, str]], rng: np.random.Generator) -> list[PlacedObject]:
    """Place objects without overlap by rejection; restart the scene if one cannot fit."""
    while True:
        placed: list[PlacedObject] = []
        for combo in combos:
            for _ in range(200):
                candidate = _random_object(combo, rng)
                if not any(candidate.overlaps(other) for other in placed):
                    placed.append(candidate)
                    break
            else:
                break
        if len(placed) == len(combos):
            return placed


def _scenes(
    rules: RuleTable,
    backgrounds: tuple[str, ...],
    in_level: list[Combination],
    counts: tuple[int, ...],
    per_count: int,
    rng: np.random.Generator,
    level: int,
) -> list[Scene]:
    by_count: list[list[Scene]] = []
    for n in counts:
        group = []
        for _ in range(per_count):
            background = backgrounds[int(rng.integers(len(backgrounds)))]
            pool = [c for c in in_level if rules.background_of(c) == background]
            picked = [pool[int(k)] for k in rng.integers(len(pool), size=n)]
            objects = _place([rules.as_dict(c) for c in picked], rng)
            labels = [rules.label_of(c) for c in picked]
            target = sum(label == rules.count_label for label in labels)
            group.append(Scene("", background, objects, labels, target, draw(objects, background)))
        by_count.append(group)
    # Interleave object counts (2, 3, 4, 2, 3, 4, ...) so that any prefix (--limit) is balanced.
    scenes = [scene for row in zip(*by_count) for scene in row]
    for i, scene in enumerate(scenes):
        scene.id = f"L{level}-s{i:03d}"
    return scenes
