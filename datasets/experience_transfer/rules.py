"""The rule table that labels Experience-Transfer objects, as data.

A table names its attributes and their values (``shape``, ``color`` and optionally
``background``: the three things the renderer can draw), its labels, the label
whose objects a test scene counts, and one label per attribute combination. The
paper's Table 1 ships as ``table1.json``; any other table in the same JSON shape
can be loaded with :meth:`RuleTable.from_json`; :func:`.rule_sources.load_rules` also takes a generated
table's name.

The oracle hypotheses of the "semantic memory" baseline are derived from the
table: the fewest single-label statements that cover the combinations a level
shows in its episodes, plus the background-flip statement when the table has one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any, Mapping

from memreason.files import read_json_file

SHAPES = ("square", "circle", "triangle")
DRAWABLE_ATTRIBUTES = ("shape", "color", "background")
PAPER_TABLE_PATH = Path(__file__).with_name("table1.json")

Combination = tuple[str, ...]


class RuleTableError(ValueError):
    """A rule table (or a mask over it) that cannot be used."""


@dataclass(frozen=True)
class OracleRule:
    """One true statement about the table: objects matching ``conditions`` carry ``label``."""

    conditions: dict[str, str]
    label: str

    def text(self) -> str:
        shape = self.conditions.get("shape")
        color = self.conditions.get("color")
        background = self.conditions.get("background")
        noun = f"{shape}s" if shape else "objects of any shape"
        subject = f"{color} {noun}" if color else (noun if shape else "objects of any colour and shape")
        where = f"On {article(background)} {background} background, " if background else "On any background, "
        return f"{where}{subject} are labelled {self.label}."

    def to_dict(self) -> dict[str, Any]:
        return {"conditions": dict(self.conditions), "label": self.label}


@dataclass(frozen=True)
class RuleTable:
    """Attributes, labels and the label of every attribute combination."""

    name: str
    attributes: dict[str, tuple[str, ...]]
    labels: tuple[str, ...]
    count_label: str
    rows: dict[Combination, str]
    level3_mask: tuple[Combination, ...] = field(default=())

    # -- construction -----------------------------------------------------------------

    @classmethod
    def paper(cls) -> "RuleTable":
        """The HDR paper's Table 1, with the default Level-3 mask."""
        return cls.from_json(PAPER_TABLE_PATH)

    @classmethod
    def from_json(cls, path: str | Path) -> "RuleTable":
        path = Path(path)
        return cls.from_dict(read_json_file(path, RuleTableError, "rules file"), source=str(path))

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "rule table") -> "RuleTable":
        def fail(message: str) -> RuleTableError:
            return RuleTableError(f"{source}: {message}")

        if not isinstance(data, Mapping):
            raise fail("expected a JSON object with 'attributes', 'labels', 'count_label' and 'rules'")
        missing = [key for key in ("attributes", "labels", "count_label", "rules") if key not in data]
        if missing:
            raise fail(f"missing key(s) {missing}")
        raw_attributes = data["attributes"]
        if not isinstance(raw_attributes, Mapping) or not raw_attributes:
            raise fail("'attributes' must map attribute names to lists of values")
        attributes: dict[str, tuple[str, ...]] = {}
        for name, values in raw_attributes.items():
            if name not in DRAWABLE_ATTRIBUTES:
                raise fail(f"attribute {name!r} cannot be drawn; use {list(DRAWABLE_ATTRIBUTES)}")
            if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
                raise fail(f"attribute {name!r} needs a non-empty list of strings")
            if len(set(values)) != len(values):
                raise fail(f"attribute {name!r} repeats a value")
            attributes[name] = tuple(values)
        for required in ("shape", "color"):
            if required not in attributes:
                raise fail(f"attribute {required!r} is required")
        unknown_shapes = [s for s in attributes["shape"] if s not in SHAPES]
        if unknown_shapes:
            raise fail(f"unknown shape(s) {unknown_shapes}; drawable shapes are {list(SHAPES)}")
        from PIL import ImageColor  # here: naming the levels and reading a table's names need no PIL

        for name in ("color", "background"):
            for value in attributes.get(name, ()):
                try:
                    ImageColor.getrgb(value)
                except ValueError:
                    raise fail(f"{name} {value!r} is not a colour name PIL knows") from None
        clash = set(attributes["color"]) & set(attributes.get("background", ()))
        if clash:
            raise fail(f"colour(s) {sorted(clash)} are also backgrounds: such objects would be invisible")

        labels = data["labels"]
        if not isinstance(labels, list) or len(labels) < 2 or not all(isinstance(x, str) for x in labels):
            raise fail("'labels' must list at least two label strings")
        count_label = data["count_label"]
        if count_label not in labels:
            raise fail(f"count_label {count_label!r} is not one of the labels {labels}")

        names = tuple(attributes)
        rows: dict[Combination, str] = {}
        if not isinstance(data["rules"], list):
            raise fail("'rules' must be a list of objects")
        for i, rule in enumerate(data["rules"]):
            if not isinstance(rule, Mapping) or set(rule) != {*names, "label"}:
                raise fail(f"rule {i} must have exactly the keys {[*names, 'label']}")
            combo = tuple(rule[name] for name in names)
            for name, value in zip(names, combo):
                if value not in attributes[name]:
                    raise fail(f"rule {i}: {name} {value!r} is not among {list(attributes[name])}")
            if rule["label"] not in labels:
                raise fail(f"rule {i}: label {rule['label']!r} is not among {labels}")
            if combo in rows:
                raise fail(f"rule {i} repeats the combination {dict(zip(names, combo))}")
            rows[combo] = rule["label"]
        every = set(product(*attributes.values()))
        if set(rows) != every:
            absent = sorted(every - set(rows))[:3]
            raise fail(f"{len(every - set(rows))} combination(s) have no rule, e.g. {absent}")

        table = cls(
            name=str(data.get("name", source)),
            attributes=attributes,
            labels=tuple(labels),
            count_label=count_label,
            rows=rows,
        )
        mask = table.parse_mask(data.get("level3_mask", []))
        return cls(**{**table.__dict__, "level3_mask": mask})

    def parse_mask(self, entries: Any) -> tuple[Combination, ...]:
        """Validate a Level-3 mask: combinations hidden from the episodes.

        A mask may never hide both backgrounds of one shape-colour pair, or the
        flip could not be inferred from what the episodes show.
        """
        if not isinstance(entries, list):
            raise RuleTableError("a Level-3 mask is a list of combinations")
        names = tuple(self.attributes)
        mask: list[Combination] = []
        for entry in entries:
            if not isinstance(entry, Mapping) or set(entry) != set(names):
                raise RuleTableError(f"mask entry {entry!r} must name exactly {list(names)}")
            combo = tuple(entry[name] for name in names)
            if combo not in self.rows:
                raise RuleTableError(f"mask entry {dict(entry)} is not a combination of the table")
            if combo in mask:
                raise RuleTableError(f"mask entry {dict(entry)} is repeated")
            mask.append(combo)
        if "background" in self.attributes:
            b = names.index("background")
            pairs = [c[:b] + c[b + 1 :] for c in mask]
            for pair in set(pairs):
                if pairs.count(pair) >= len(self.attributes["background"]):
                    hidden = dict(zip([n for n in names if n != "background"], pair))
                    raise RuleTableError(f"the mask hides every background of {hidden}: the flip would not be inferable")
        return tuple(mask)

    # -- queries ----------------------------------------------------------------------

    @property
    def backgrounds(self) -> tuple[str, ...]:
        return self.attributes.get("background", ("white",))

    def as_dict(self, combo: Combination) -> dict[str, str]:
        return dict(zip(self.attributes, combo))

    def label_of(self, combo: Combination) -> str:
        return self.rows[combo]

    def combinations(self, backgrounds: tuple[str, ...] | None = None) -> list[Combination]:
        """All combinations, in table order, optionally limited to some backgrounds."""
        if backgrounds is None or "background" not in self.attributes:
            return list(self.rows)
        b = list(self.attributes).index("background")
        return [c for c in self.rows if c[b] in backgrounds]

    def background_of(self, combo: Combination) -> str:
        if "background" not in self.attributes:
            return self.backgrounds[0]
        return combo[list(self.attributes).index("background")]

    def flips_with_background(self) -> bool:
        """True when two backgrounds and two labels exist and every object's label flips between them."""
        if len(self.backgrounds) != 2 or len(self.labels) != 2 or "background" not in self.attributes:
            return False
        names = list(self.attributes)
        b = names.index("background")
        for combo, label in self.rows.items():
            if combo[b] != self.backgrounds[0]:
                continue
            other = combo[:b] + (self.backgrounds[1],) + combo[b + 1 :]
            if self.rows[other] == label:
                return False
        return True

    def oracle_rules(self, visible: list[Combination]) -> list[OracleRule]:
        """The fewest single-label statements covering ``visible`` exactly.

        Combinations that differ only in one attribute and share a label merge into
        one statement about "any" value of that attribute, when every value of that
        attribute is visible; shapes merge first, then colours, never backgrounds.
        """
        names = list(self.attributes)
        terms: list[tuple[dict[str, str], str]] = [(self.as_dict(c), self.rows[c]) for c in visible]
        for attr in [n for n in ("shape", "color") if n in names]:
            groups: dict[tuple, list[str]] = {}
            for conditions, label in terms:
                if attr not in conditions:
                    groups.setdefault((tuple(sorted(conditions.items())), label, None), [])
                    continue
                rest = tuple(sorted((k, v) for k, v in conditions.items() if k != attr))
                groups.setdefault((rest, label, attr), []).append(conditions[attr])
            merged: list[tuple[dict[str, str], str]] = []
            for (rest, label, grouped), values in groups.items():
                if grouped is not None and set(values) == set(self.attributes[attr]):
                    merged.append((dict(rest), label))
                elif grouped is not None:
                    merged.extend(({**dict(rest), attr: v}, label) for v in values)
                else:
                    merged.append((dict(rest), label))
            terms = merged
        order = {n: {v: i for i, v in enumerate(self.attributes[n])} for n in names}

        def key(term: tuple[dict[str, str], str]) -> tuple:
            conditions = term[0]
            return tuple(order[n].get(conditions.get(n, ""), -1) for n in reversed(names))

        ordered = sorted(terms, key=key)
        return [OracleRule({n: c[n] for n in names if n in c}, label) for c, label in ordered]

    def flip_statement(self) -> str:
        first, second = self.backgrounds
        return (
            f"If an object of a given colour and shape has one label on {article(first)} {first} background, "
            f"the same object has the other label on {article(second)} {second} background."
        )

    def to_dict(self) -> dict[str, Any]:
        names = list(self.attributes)
        return {
            "name": self.name,
            "attributes": {k: list(v) for k, v in self.attributes.items()},
            "labels": list(self.labels),
            "count_label": self.count_label,
            "rules": [{**dict(zip(names, c)), "label": label} for c, label in self.rows.items()],
            "level3_mask": [dict(zip(names, c)) for c in self.level3_mask],
        }


def article(word: str) -> str:
    """The indefinite article before ``word`` ("an ivory", "a white")."""
    return "an" if word[:1].lower() in "aeiou" else "a"
