"""Demonstrations from a training split that never overlaps the evaluation split, placed with DSPy.

Experience-Transfer: training scenes come from the same level generated with another seed
(``seed + TRAIN_SEED_OFFSET``); any scene whose description equals an evaluation scene is
dropped, so no evaluation scene is ever shown as a demonstration. ARC: training tasks
(``arc1-training``) that are not in the evaluation split.

Demonstrations go on the per-example predictor only (an Experience-Transfer program's
``reasoner``): ``dspy.LabeledFewShot`` (the scene and its true count) or
``dspy.BootstrapFewShot`` (the program's own correct answers, with its reasoning). A demo
carries the scene, not the memory: the memory is the same for every call and is already
in the prompt, so copying it into each demo would only lengthen the prompt.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

import dspy

from memreason.datasets.experience_transfer import ExperienceTransferLevel, make_level
from memreason.programs.shared.reasoner import MEMORY_FIELDS

from .choices import DEMO_SOURCES

TRAIN_SEED_OFFSET = 1000


def training_level(data: ExperienceTransferLevel, *, seed: int, offset: int = TRAIN_SEED_OFFSET) -> ExperienceTransferLevel:
    """The evaluation level regenerated with seed ``seed + offset``, minus scenes described like evaluation ones."""
    train = make_level(data.level, seed=seed + offset, rules=data.rules)
    seen = {s.text() for s in data.test}
    train.test = [s for s in train.test if s.text() not in seen]
    return train


def scene_examples(
    level: ExperienceTransferLevel, observe: Callable[[Any], Any], limit: int | None = None, shuffle_seed: int = 0
) -> list[dspy.Example]:
    """One ``dspy.Example(query, scene -> count)`` per scene, shuffled (object counts mixed), first ``limit``.

    Each also carries the task's ``labels`` and the scene's ``objects`` with their true labels,
    the inputs and output of a per-object reasoner (``LabelObjects``), so labelled demos serve it too.
    """
    scenes = list(level.test)
    random.Random(shuffle_seed).shuffle(scenes)
    scenes = scenes[:limit] if limit is not None else scenes
    labels = list(level.rules.labels)
    return [
        dspy.Example(
            query=level.query,
            labels=labels,
            scene=observe(s),
            count=s.target,
            scene_id=s.id,
            objects=[
                {"object_and_background": f"{o.color} {o.shape} on {s.background}", "evidence": "", "label": label}
                for o, label in zip(s.objects, s.labels)
            ],
        ).with_inputs("query", "scene")
        for s in scenes
    ]


def count_metric(example, prediction, trace=None) -> float:
    """1.0 when the predicted count is the true one."""
    try:
        return float(int(prediction.count) == int(example.count))
    except (TypeError, ValueError, AttributeError):
        return 0.0


def place_demos(program, trainset: Sequence[dspy.Example], k: int, *, source: str = "labeled") -> None:
    """Put ``k`` demonstrations on ``program.reasoner``'s predictor, in place.

    ``bootstrap`` runs the program (its memory must be built or restored) on training scenes
    under the current context's LM and keeps up to ``k`` correct traces.
    """
    if source not in DEMO_SOURCES:
        raise ValueError(f"demo source must be one of {', '.join(DEMO_SOURCES)}, got {source!r}")
    if k <= 0:
        return
    if source == "labeled":
        program.reasoner = dspy.LabeledFewShot(k=k).compile(program.reasoner, trainset=list(trainset))
    else:
        optimizer = dspy.BootstrapFewShot(metric=count_metric, max_bootstrapped_demos=k, max_labeled_demos=0)
        program.reasoner = optimizer.compile(program, trainset=list(trainset)).reasoner  # optimizers see the reasoner only
    strip_memory(program)


def strip_memory(program: dspy.Module) -> None:
    """Keep in every demo of ``program``'s predictors only the fields its signature has, less the memory.

    The reasoner never shows the memory (see :class:`memreason.programs.Reasoner`); dropping it
    here keeps a saved state from holding a copy of the memory per demo, and the fields the other
    form of the reasoner uses (``count`` or ``labels`` and ``objects``) and bookkeeping ids go too."""
    for _, predictor in program.named_predictors():
        keep = set(predictor.signature.fields) - set(MEMORY_FIELDS)
        predictor.demos = [_only(d, keep) for d in predictor.demos]


def _only(demo, keep: set[str]) -> dspy.Example:
    data = demo.toDict() if hasattr(demo, "toDict") else dict(demo)
    return dspy.Example({k: v for k, v in data.items() if k in keep})


def arc_training_tasks(eval_ids: Sequence[str], *, limit: int, split: str = "arc1-training"):
    """Up to ``limit`` ARC training tasks, none of them in the evaluation split."""
    from memreason.datasets.arc import load_split

    excluded = set(eval_ids)
    tasks = [t for t in load_split(split) if t.id not in excluded]
    random.Random(0).shuffle(tasks)
    return tasks[:limit]
