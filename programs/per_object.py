"""Per-object reasoning: the model labels each object, code counts (HDR paper, y = sum_j l_j).

    labels  = the labels the episodes carry (or the ones given)
    objects = LabelObjects(memory, labels, scene)       # one call; each label one of ``labels``
    count   = |{o in objects : o.label = the label the query counts}|

The label field is narrowed to the task's labels on every call (a ``Literal`` in the output
type, so a server that decodes under a JSON schema cannot write anything else), and the
count never comes from the model.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Literal, Sequence

import dspy
from pydantic import Field, create_model

from memreason.signatures import ObjectLabel


def task_labels(episodes: Sequence[Any] | None, given: Sequence[str] | None) -> tuple[str, ...]:
    """``given``, or the distinct labels of ``episodes`` in order of first appearance."""
    if given:
        return tuple(given)
    seen = [e.label for e in episodes or () if getattr(e, "label", None)]
    labels = tuple(dict.fromkeys(seen))
    if len(labels) < 2:
        raise ValueError("per-object reasoning needs the task's labels: give labels=[...] or labelled episodes "
                         f"(found {list(labels)})")
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
        raise ValueError(f"the query must name exactly one of the labels {list(labels)} to count "
                         f"(or give count_label=...); it names {named}: {query!r}")
    return named[0]


def bounded(signature: type[dspy.Signature], labels: tuple[str, ...]) -> type[dspy.Signature]:
    """``signature`` with its ``objects`` output narrowed to ``labels``."""
    return signature.with_updated_fields("objects", type_=list[_object_label(labels)])


@lru_cache(maxsize=32)
def _object_label(labels: tuple[str, ...]) -> type[ObjectLabel]:
    field = ObjectLabel.model_fields["label"]
    return create_model("ObjectLabel", __base__=ObjectLabel,
                        label=(Literal[labels], Field(description=field.description)))


def count_of(objects: Sequence[Any], label: str) -> tuple[int, list[dict[str, str]]]:
    """How many ``objects`` carry ``label``, and the objects as plain dicts (for records)."""
    plain = [{key: str(getattr(o, key, "") if not isinstance(o, dict) else o.get(key, ""))
              for key in ("object_and_background", "evidence", "label")} for o in objects]
    return sum(o["label"] == label for o in plain), plain
