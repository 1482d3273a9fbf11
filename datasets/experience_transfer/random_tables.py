"""Seeded random rule tables: as many Experience-Transfer tasks as a consolidator can be trained and tested on.

    tables = random_tables("train", 8)           # [RuleTable, ...]; "validation" and "test" draw from other seeds
    data = make_level(2, rules=tables[0])        # episodes, scenes and oracle hypotheses, as for Table 1
    table_named("hard-test-7-0")                 # one table by its name (what --rules takes)

A table draws 2 of the drawable shapes, 3 colours and 2 backgrounds (from palettes that
share no colour, so every object is visible), a label pair (the first label is counted), and
one of four structures:

- ``single``: one colour decides the label ("purple objects are toxic");
- ``conjunction``: one shape and one colour together decide it ("purple triangles are toxic");
- ``flip``: a ``single`` rule on the first background, every label flipped on the second
  (the structure of the paper's Table 1);
- ``exception``: a ``single`` rule with one combination the other way.

Every table shows both labels on each background (so Level 1 has something to count and
something not to), carries a Level-3 mask of two combinations (never both backgrounds of one
shape-colour pair), and is not the paper's Table 1. Splits draw from disjoint seed streams
(``numpy``'s ``SeedSequence([split, seed, i])``); :func:`fingerprint` tells tables apart.

``hard=True`` draws harder tables instead, from streams of their own
(``SeedSequence([split, seed, i, 1])``, so the tables drawn without it never change): all
three shapes, 3 colours and 2 backgrounds (18 combinations), and one of two structures in
which every attribute decides some label:

- ``pair_flip``: each shape-colour pair has its own label on the first background (4 or 5 of
  the 9 pairs, drawn, carry the counted label) and the other label on the second;
- ``interaction``: two attributes, drawn, decide the label together and neither alone (the
  counted label where exactly one of them takes its drawn key value), and one combination,
  drawn, is an exception with the other label, so the third attribute decides it.

A hard table's Level-3 mask hides 3 of the 18 combinations: three distinct shape-colour
pairs, never the exception.
"""

from __future__ import annotations

import re
from itertools import product
from typing import Any

import numpy as np

from .rules import SHAPES, RuleTable, RuleTableError

SPLITS = {"train": 1, "validation": 2, "test": 3}
STRUCTURES = ("single", "conjunction", "flip", "exception")
HARD_STRUCTURES = ("pair_flip", "interaction")
INTERACTIONS = (("shape", "color"), ("shape", "background"), ("color", "background"))
HARD_MASK_SIZE = 3  # of a hard table's 18 combinations
COLORS = ("red", "green", "blue", "yellow", "purple", "orange", "teal", "pink", "brown", "cyan")
BACKGROUNDS = ("white", "black", "ivory", "slategray", "lightgray", "beige", "lavender")
LABEL_PAIRS = (("anomaly", "normal"), ("toxic", "edible"), ("broken", "working"), ("rare", "common"), ("hot", "cold"))


def random_tables(split: str, n: int, *, seed: int = 0, hard: bool = False) -> list[RuleTable]:
    """``n`` tables of ``split`` (``train``, ``validation`` or ``test``), the same for the same arguments.

    ``hard``: the harder tables (``pair_flip``, ``interaction``; see the module docs), from seed streams of their own.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    paper = fingerprint(RuleTable.paper())
    tables: list[RuleTable] = []
    i = 0
    while len(tables) < n:
        table = _draw(split, seed, i, hard)
        i += 1
        if fingerprint(table) != paper:
            tables.append(table)
    return tables


TABLE_NAME = re.compile(r"(hard-)?(train|validation|test)-(\d+)-(\d+)(?: \((\w+)\))?")


def table_named(name: str) -> RuleTable | None:
    """The table :func:`random_tables` names ``name`` (``[hard-]<split>-<seed>-<i>``, ``i`` counting the
    draws, optionally followed by its structure as the table's own name ends: ``hard-test-7-0 (interaction)``);
    ``None`` for a string that is not such a name. A draw equal to the paper's Table 1, or not of the structure
    named, is refused (:func:`random_tables` skips the first)."""
    match = TABLE_NAME.fullmatch(name.strip())
    if match is None:
        return None
    table = _draw(match[2], int(match[3]), int(match[4]), hard=bool(match[1]))
    if match[5] and table.name != name.strip():
        raise RuleTableError(f"generated table {name!r} does not exist: that draw is {table.name!r}")
    if fingerprint(table) == fingerprint(RuleTable.paper()):
        raise RuleTableError(f"generated table {name!r} is the paper's Table 1 (the generator skips it); use another")
    return table


def _draw(split: str, seed: int, i: int, hard: bool) -> RuleTable:
    """The ``i``-th draw of ``split`` at ``seed``, named as :func:`table_named` reads it."""
    if hard:
        return random_table(np.random.default_rng([SPLITS[split], seed, i, 1]), name=f"hard-{split}-{seed}-{i}", hard=True)
    return random_table(np.random.default_rng([SPLITS[split], seed, i]), name=f"{split}-{seed}-{i}")


def random_table(rng: np.random.Generator, *, name: str = "random", hard: bool = False) -> RuleTable:
    """One table drawn with ``rng`` (see the module docs for what is drawn; ``hard``: a harder one)."""
    if hard:
        return _hard_table(rng, name)
    shapes = [str(s) for s in rng.choice(SHAPES, size=2, replace=False)]
    colors = [str(c) for c in rng.choice(COLORS, size=3, replace=False)]
    backgrounds = [str(b) for b in rng.choice(BACKGROUNDS, size=2, replace=False)]
    counted, other = LABEL_PAIRS[int(rng.integers(len(LABEL_PAIRS)))]
    structure = STRUCTURES[int(rng.integers(len(STRUCTURES)))]
    key_color, key_shape = colors[int(rng.integers(3))], shapes[int(rng.integers(2))]

    def label(shape: str, color: str, background: str) -> str:
        if structure == "conjunction":
            hit = shape == key_shape and color == key_color
        else:
            hit = color == key_color
        if structure == "flip" and background == backgrounds[1]:
            hit = not hit
        return counted if hit else other

    rules = [
        {"shape": s, "color": c, "background": b, "label": label(s, c, b)} for b, c, s in product(backgrounds, colors, shapes)
    ]
    if structure == "exception":  # one combination with the key colour's label the other way
        candidates = [r for r in rules if r["color"] != key_color]
        flipped = candidates[int(rng.integers(len(candidates)))]
        flipped["label"] = counted
    order = rng.permutation(len(rules))
    masked = [rules[int(k)] for k in order]
    mask, pairs = [], set()
    for rule in masked:
        pair = (rule["shape"], rule["color"])
        if pair not in pairs:
            pairs.add(pair)
            mask.append({k: rule[k] for k in ("shape", "color", "background")})
        if len(mask) == 2:
            break
    return RuleTable.from_dict(
        {
            "name": f"{name} ({structure})",
            "structure": structure,
            "attributes": {"shape": shapes, "color": colors, "background": backgrounds},
            "labels": [other, counted],
            "count_label": counted,
            "rules": rules,
            "level3_mask": mask,
        },
        source=name,
    )


def _hard_table(rng: np.random.Generator, name: str) -> RuleTable:
    shapes = [str(s) for s in rng.permutation(SHAPES)]
    colors = [str(c) for c in rng.choice(COLORS, size=3, replace=False)]
    backgrounds = [str(b) for b in rng.choice(BACKGROUNDS, size=2, replace=False)]
    counted, other = LABEL_PAIRS[int(rng.integers(len(LABEL_PAIRS)))]
    structure = HARD_STRUCTURES[int(rng.integers(len(HARD_STRUCTURES)))]
    values = {"shape": shapes, "color": colors, "background": backgrounds}
    combos = [{"shape": s, "color": c, "background": b} for b, c, s in product(backgrounds, colors, shapes)]
    exception = None
    if structure == "pair_flip":
        pairs = list(product(shapes, colors))
        hits = {pairs[int(j)] for j in rng.choice(len(pairs), size=int(rng.integers(4, 6)), replace=False)}

        def hit(combo: dict[str, str]) -> bool:
            return ((combo["shape"], combo["color"]) in hits) != (combo["background"] == backgrounds[1])

    else:
        first, second = INTERACTIONS[int(rng.integers(len(INTERACTIONS)))]
        keys = {attr: values[attr][int(rng.integers(len(values[attr])))] for attr in (first, second)}

        def hit(combo: dict[str, str]) -> bool:
            return (combo[first] == keys[first]) != (combo[second] == keys[second])

        exception = int(rng.integers(len(combos)))
    rules = [{**combo, "label": counted if hit(combo) != (k == exception) else other} for k, combo in enumerate(combos)]
    mask, pairs_hidden = [], set()
    for k in rng.permutation(len(combos)):
        combo = combos[int(k)]
        pair = (combo["shape"], combo["color"])
        if int(k) != exception and pair not in pairs_hidden:
            pairs_hidden.add(pair)
            mask.append(dict(combo))
        if len(mask) == HARD_MASK_SIZE:
            break
    return RuleTable.from_dict(
        {
            "name": f"{name} ({structure})",
            "structure": structure,
            "attributes": values,
            "labels": [other, counted],
            "count_label": counted,
            "rules": rules,
            "level3_mask": mask,
        },
        source=name,
    )


def fingerprint(table: RuleTable) -> tuple[Any, ...]:
    """What makes two tables the same task: attribute values, labels, the counted label and every row."""
    return (
        tuple((k, tuple(v)) for k, v in table.attributes.items()),
        tuple(sorted(table.labels)),
        table.count_label,
        tuple(sorted(table.rows.items())),
    )
