"""Accuracy on the objects no episode showed, apart from the rest (Level 3), and what memory says of them.

    masked_results(per_run, memories, data)   # the ``masked`` entry of a run's results (None without a mask)
    masked_coverage(record, data)             # per masked combination (hypothesis_scoring): true rules, what memory says

At Level 3 the mask's combinations are hidden from the episodes and still drawn in the test
scenes (:func:`memreason.datasets.experience_transfer.make_level`), so a scene's accuracy
mixes objects the memory was built from with objects it must reach by generalising. This
module takes them apart:

- **objects** (per-object readers, whose records hold each object's label): every test object
  is matched to the reader's object by its colour and shape words (the first unused one that
  names both; else the one in the same position), scored right when the label matches the
  table's, and counted as ``masked`` when its combination is one the mask hides, ``visible``
  otherwise. Each object is scored by its share of right answers over the runs and its 95% CI
  comes from :func:`memreason.eval.stats.intervals` (Wilson's interval where every object is
  right or wrong in every run).
- **scenes** (every row): accuracy on the scenes that hold at least one masked object and on
  the others, with the same intervals.
- **undecidable** (memories that record the combinations the episodes leave open,
  ``hdr_grounded``'s ``undecidable`` with ``generalise``): how many test objects are of such a
  combination, per run, and the accuracy on them where objects are scored (the objects the
  first run's memory leaves open, scored over every run); ``None`` where no memory records them.

A scene that failed has no object labels: where the reader labels objects, its objects count wrong.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from memreason.datasets.experience_transfer import ExperienceTransferLevel, Scene

from ..stats import intervals

__all__ = ["align_objects", "masked_results", "object_attributes", "object_masks"]


def object_attributes(scene: Scene, data: ExperienceTransferLevel) -> list[dict[str, str]]:
    """Each object's attribute combination in ``scene``, by the table's attribute names."""
    names = list(data.rules.attributes)
    out = []
    for o in scene.objects:
        attrs = {"shape": o.shape, "color": o.color, "background": scene.background}
        out.append({n: attrs[n] for n in names if n in attrs})
    return out


def object_masks(scene: Scene, data: ExperienceTransferLevel) -> list[bool]:
    """Whether each object of ``scene`` is of a combination the level's mask hides from the episodes."""
    masked = {tuple(data.rules.as_dict(c).items()) for c in data.masked}
    return [tuple(a.items()) in masked for a in object_attributes(scene, data)]


def align_objects(scene: Scene, predicted: Sequence[Mapping[str, Any]]) -> list[int | None]:
    """For each object of ``scene``, the index of the reader's object that is it (``None``: none is)."""
    texts = [str(p.get("object_and_background", "")).lower() for p in predicted]
    used: set[int] = set()
    out: list[int | None] = []
    for j, o in enumerate(scene.objects):
        words = [rf"(?<![a-z0-9]){re.escape(w.lower())}s?(?![a-z0-9])" for w in (o.color, o.shape)]
        hit = next((i for i, t in enumerate(texts) if i not in used and all(re.search(w, t) for w in words)), None)
        if hit is None and j < len(texts) and j not in used:
            hit = j
        if hit is not None:
            used.add(hit)
        out.append(hit)
    return out


def masked_results(
    per_run: Sequence[Sequence[Mapping[str, Any]]], memories: Sequence[Mapping[str, Any]], data: ExperienceTransferLevel
) -> dict[str, Any] | None:
    """The ``masked`` entry of a run's results (see the module docs); ``None`` on a level without a mask."""
    if not data.masked or not per_run:
        return None
    scenes = {s.id: s for s in data.test}
    records = list(zip(*per_run))  # each scene's records, one per run
    undecided = [_undecidable(m) for m in memories] or [set()]
    scene_share: dict[str, list[float]] = {"with_masked": [], "without_masked": []}
    object_share: dict[str, list[float]] = {"masked": [], "visible": [], "undecidable": []}
    scored_objects = any(r.get("object_labels") is not None for recs in records for r in recs)  # a failed scene has none
    undecidable_objects = [0] * len(per_run)
    for recs in records:
        scene = scenes[recs[0]["id"]]
        masks = object_masks(scene, data)
        attrs = object_attributes(scene, data)
        share = sum(r["prediction"] is not None and r["prediction"] == r["target"] for r in recs) / len(recs)
        scene_share["with_masked" if any(masks) else "without_masked"].append(share)
        for run, rec in enumerate(recs):
            undecidable_objects[run] += sum(tuple(sorted(a.items())) in undecided[min(run, len(undecided) - 1)] for a in attrs)
        if not scored_objects:
            continue
        right = [0] * len(scene.objects)
        for rec in recs:
            predicted = rec.get("object_labels") or []  # a scene that failed: every object wrong
            for j, i in enumerate(align_objects(scene, predicted)):
                right[j] += i is not None and predicted[i].get("label") == scene.labels[j]
        for j, masked in enumerate(masks):
            object_share["masked" if masked else "visible"].append(right[j] / len(recs))
            if tuple(sorted(attrs[j].items())) in undecided[0]:
                object_share["undecidable"].append(right[j] / len(recs))
    cis = intervals({**{f"scenes:{k}": v for k, v in scene_share.items()}, **{k: v for k, v in object_share.items() if v}})
    return {
        "combinations": [data.rules.as_dict(c) for c in data.masked],
        "objects": ({k: _cell(v, cis.get(k)) for k, v in object_share.items() if k != "undecidable"} if scored_objects else None),
        "scenes": {k: _cell(v, cis[f"scenes:{k}"]) for k, v in scene_share.items()},
        "undecidable": (
            {
                "combinations": sorted(len(u) for u in undecided)[-1] if any(undecided) else 0,
                "objects": undecidable_objects,
                **({"accuracy": _cell(object_share["undecidable"], cis.get("undecidable"))} if scored_objects else {}),
            }
            if any("undecidable" in m for m in memories)
            else None  # no memory records what the episodes leave open
        ),
    }


def _undecidable(record: Mapping[str, Any]) -> set[tuple]:
    return {tuple(sorted(e["combination"].items())) for e in record.get("undecidable", []) or []}


def _cell(shares: Sequence[float], ci) -> dict[str, Any]:
    n = len(shares)
    return {"n": n, "accuracy": (sum(shares) / n) if n else None, "ci": ci}
