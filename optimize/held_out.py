"""A stream task's tuning items, kept apart from the items a user reports.

    tuning = TuningStream(get_task("rg:puzzle24"), report_seed=0, report_size=50)
    tuning.seed                     # the tuning stream's seed: 0 + TUNING_SEED_OFFSET
    tuning.run(StreamOptions(program="fewshot", task="rg:puzzle24", seed=tuning.seed, size=20))

``python -m eval PROGRAM --task T --seed S --size N`` reports on the first N items of the stream S. A study of a
stream program on T tunes on another stream, ``S + TUNING_SEED_OFFSET`` (not the stream of S's seed problems
either, ``S + 1_000_003``), and skips every problem whose question is among the first ``report_size`` reported
items: a generator with few problems can repeat one across streams, and a skipped item's id (its index in the
stream) says it was skipped. The wrapped task is the study's task in every other respect (its name, its check,
its scorer), so a trial is the task's own run (:meth:`memreason.eval.tasks.Task.run`).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from memreason.eval.stream.task import StreamTask

__all__ = ["TUNING_SEED_OFFSET", "TuningData", "TuningStream", "tuning_seed"]

TUNING_SEED_OFFSET = 2_000_029  # far from the report seeds users step through, and from the seed problems' offset


def tuning_seed(report_seed: int) -> int:
    """The seed of the stream a study tunes on, for items reported with ``report_seed``."""
    return report_seed + TUNING_SEED_OFFSET


class TuningData:
    """A task's data whose test items skip the reported items' questions; seed problems, scores, counts as the task's."""

    def __init__(self, data: Any, reported: set[str]):
        self.data, self.reported = data, reported

    def items(self, seed: int = 0, size: int = 50, *, prefix: str = "", distinct: bool = False) -> list[Any]:
        """The first ``size`` items of stream ``seed`` whose question no reported item asks (drawn further as needed)."""
        drawn = size
        while True:
            items = self.data.items(seed, drawn, prefix=prefix, distinct=distinct)
            kept = [item for item in items if _question(item) not in self.reported][:size]
            if len(kept) == size or len(items) < drawn:
                return kept
            drawn += size - len(kept)

    def seed_items(self, seed: int = 0, size: int = 10, *, avoid: Any = ()) -> list[Any]:
        return self.data.seed_items(seed, size, avoid=avoid)

    def score(self, item: Any, answer: str | None) -> float:
        return self.data.score(item, answer)

    def __getattr__(self, name: str) -> Any:  # counts(seed) and whatever else a task's data offers
        return getattr(self.data, name)


class TuningStream(StreamTask):
    """``task`` with its items drawn from the tuning stream and none of the first ``report_size`` reported ones."""

    def __init__(self, task: StreamTask, *, report_seed: int, report_size: int):
        self.task, self.report_seed, self.report_size = task, report_seed, report_size
        self.name, self.summary, self.not_here = task.name, task.summary, task.not_here
        self.seed = tuning_seed(report_seed)
        self._reported: dict[str, set[str]] = {}  # the reported questions by the data's config, drawn once

    @property
    def checker(self) -> Callable[..., Any] | None:
        return self.task.checker

    def data(self, config: dict[str, Any] | None = None) -> TuningData:
        data = self.task.data(config)
        key = json.dumps(config or {}, sort_keys=True)
        if key not in self._reported:
            counts = getattr(data, "counts", None)  # a task that holds few items reports at most those
            size = min(self.report_size, counts(self.report_seed)[0]) if counts is not None else self.report_size
            self._reported[key] = {_question(item) for item in data.items(self.report_seed, size, distinct=True)}
        return TuningData(data, self._reported[key])

    def score(self, data: Any, item: Any, answer: str | None) -> float:
        return self.task.score(data, item, answer)


def _question(item: Any) -> str:
    return str(getattr(item, "question", item)).strip()
