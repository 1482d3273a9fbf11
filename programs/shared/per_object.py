"""Per-object reasoning: the model labels each object, code counts (HDR paper, y = sum_j l_j).

    labels  = the labels the episodes carry (or the ones given)
    objects = LabelObjects(memory, labels, scene)       # one call; each label one of ``labels``
    count   = |{o in objects : o.label = the label the query counts}|

With a retrieval budget k, each object gets a call of its own, against the memory nearest to it:

    background, objects = SceneObjects(scene)             # one call: what is in the scene
    for each object o:  d = "<o> on a <background> background"
        label(o) = LabelObject(nearest(memory, d, k), labels, d)

``nearest`` ranks memory entries by the words they share with the object's description,
each word weighted by its inverse document frequency over the memory (a word every entry
has, such as "background", counts for little; a colour or a shape counts for much).

The label field is narrowed to the task's labels on every call (a ``Literal`` in the output
type, so a server that decodes under a JSON schema cannot write anything else), and the
count never comes from the model.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any, Literal, Sequence

import dspy
from pydantic import Field, create_model

from memreason.signatures import ObjectLabel

__all__ = ["bounded", "count_of", "counted_label", "entry_words", "nearest", "task_labels"]


def task_labels(episodes: Sequence[Any] | None, given: Sequence[str] | None) -> tuple[str, ...]:
    """``given``, or the distinct labels of ``episodes`` in order of first appearance."""
    if given:
        return tuple(given)
    seen = [e.label for e in episodes or () if getattr(e, "label", None)]
    labels = tuple(dict.fromkeys(seen))
    if len(labels) < 2:
        raise ValueError(
            f"per-object reasoning needs the task's labels: give labels=[...] or labelled episodes (found {list(labels)})"
        )
    return labels


def counted_label(query: str, labels: Sequence[str], given: str | None = None) -> str:
    """``given``, or the one label ``query`` names ("Count the anomaly objects" -> "anomaly")."""
    if given is not None:
        if given not in labels:
            raise ValueError(f"count_label {given!r} is not one of the labels {list(labels)}")
        return given
    words = set(re.findall(r"[a-z0-9_-]+", query.lower()))
    named = [label for label in labels if {label.lower(), f"{label.lower()}s", f"{label.lower()}es"} & words]
    if len(named) != 1:
        raise ValueError(
            f"the query must name exactly one of the labels {list(labels)} to count "
            f"(or give count_label=...); it names {named}: {query!r}"
        )
    return named[0]


def bounded(signature: type[dspy.Signature], labels: tuple[str, ...]) -> type[dspy.Signature]:
    """``signature`` with its ``objects`` output (``LabelObjects``) or its ``label`` (``LabelObject``) narrowed to ``labels``."""
    if "label" in signature.output_fields:
        return signature.with_updated_fields("label", type_=Literal[labels])
    return signature.with_updated_fields("objects", type_=list[_object_label(labels)])


@lru_cache(maxsize=32)
def _object_label(labels: tuple[str, ...]) -> type[ObjectLabel]:
    field = ObjectLabel.model_fields["label"]
    return create_model("ObjectLabel", __base__=ObjectLabel, label=(Literal[labels], Field(description=field.description)))


def count_of(objects: Sequence[Any], label: str) -> tuple[int, list[dict[str, str]]]:
    """How many ``objects`` carry ``label``, and the objects as plain dicts (for records)."""
    plain = [
        {
            key: str(getattr(o, key, "") if not isinstance(o, dict) else o.get(key, ""))
            for key in ("object_and_background", "evidence", "label")
        }
        for o in objects
    ]
    return sum(o["label"] == label for o in plain), plain


def entry_words(entry: Any) -> frozenset[str] | None:
    """The words of a memory entry (a hypothesis, or an episode's text and label), singular; ``None`` for an image
    episode without attributes, which cannot be matched by its words."""
    if isinstance(entry, str):
        return _words(entry)
    observation, attributes = getattr(entry, "observation", None), getattr(entry, "attributes", None)
    if isinstance(observation, str):
        return _words(f"{observation} {entry.label or ''}")
    if attributes:
        return _words(" ".join(attributes.values()))
    return None


def nearest(entries: Sequence[Any], description: str, k: int) -> list[Any]:
    """The ``k`` entries sharing the most idf-weighted words with ``description``, nearest first (memory order among equals).

    Entries that cannot be matched by their words (an image episode without attributes) are always kept, first.
    """
    words = [entry_words(e) for e in entries]
    matchable = [w for w in words if w is not None]
    document_frequency: dict[str, int] = {}
    for entry in matchable:
        for word in entry:
            document_frequency[word] = document_frequency.get(word, 0) + 1
    wanted = _words(description)
    score = {
        i: sum(math.log(1 + len(matchable) / document_frequency[w]) for w in wanted & entry)
        for i, entry in enumerate(words)
        if entry is not None
    }
    chosen = sorted(score, key=lambda i: -score[i])[:k]
    return [e for e, w in zip(entries, words) if w is None] + [entries[i] for i in chosen]


def _words(text: str) -> frozenset[str]:
    """Lower-case words with a plural "s" taken off ("circles" -> "circle"), so rules and objects meet."""
    return frozenset(
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in re.findall(r"[a-z0-9]+", text.lower())
    )
