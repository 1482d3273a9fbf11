"""Stream tasks: ``rg:NAME``, any reasoning-gym dataset (:class:`GymTask`), and ``et:L1``-``et:L3``, Experience-Transfer's
scenes as a stream (:class:`SceneStreamTask`), each built on demand by the registry.

    task = get_task("rg:puzzle24")                     # registered the first time it is asked for
    task.programs()                                    # the programs registered for stream tasks
    task.checker                                       # the reference-free check (puzzle24, countdown), else None
    task.run(StreamOptions(program="fewshot", task="rg:puzzle24", size=50))

Items are the dataset's (:mod:`memreason.datasets.gym`), scored by its own ``score_answer``; an answer counts
as right at a score of 1 (some datasets give partial credit, recorded as ``score``). A stream task of your own
subclasses :class:`StreamTask`: a name, ``data(config)`` (items, seed items, a score) and, where it has one, a check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, ClassVar

from memreason.datasets.experience_transfer.generate import LEVELS
from memreason.datasets.gym import GymData, GymError, GymItem, dataset_names
from memreason.datasets.gym_checks import checker_for
from memreason.programs.registry import STREAM

from ..harness.errors import UsageError
from ..tasks.task import Task

if TYPE_CHECKING:
    from memreason.datasets.experience_transfer.stream import SceneStream

__all__ = [
    "GYM_PREFIX",
    "SCENES_PREFIX",
    "GymTask",
    "ON_DEMAND",
    "SceneStreamTask",
    "StreamTask",
    "TASKS",
    "gym_task",
    "scene_task",
]

GYM_PREFIX = "rg:"
SCENES_PREFIX = "et:"
TASKS: list[Task] = []  # none registered up front: ``rg:NAME`` and ``et:LN`` are built when asked for

# Programs of other kinds, and why they cannot run on a stream task (said by ``Task.why_not``).
NOT_HERE = {
    "grids": "written for ARC grids (train pairs shown, a transform(grid) program): "
    "on a stream task use arcmemo_ps_stream, arcmemo_oe_stream or cheatsheet_cu",
    "scenes": "written for Experience-Transfer's labelled episodes and scenes, which a stream task has none of",
    "problems": "reads each problem's own labelled episodes, which a stream task's problems do not have",
}


class StreamTask(Task):
    """A stream of text problems with text answers: what every stream program runs on."""

    kind: ClassVar[str] = STREAM
    not_here: ClassVar[dict[str, str]] = NOT_HERE
    unit: ClassVar[str] = "items"
    item: ClassVar[str] = "item"
    right: ClassVar[str] = "answer right"

    @property
    def checker(self) -> Callable[..., Any] | None:
        """The check that needs no reference answer (``checker(metadata, answer) -> Check``), or None."""
        return None

    def data(self, config: dict[str, Any] | None = None) -> Any:
        """The items' source for ``config``: ``items(seed, size, distinct=)``, ``seed_items(seed, size, avoid=)``,
        ``score(item, answer)``; :class:`UsageError` (one line) for a config it refuses."""
        raise NotImplementedError

    def score(self, data: Any, item: GymItem, answer: str | None) -> float:
        """The score of ``answer`` to ``item`` (1.0 right)."""
        return data.score(item, answer)

    def run(self, options: Any, *, spend: Any = None) -> Any:
        from .evaluate import run_stream_cell

        return run_stream_cell(options, task=self, spend=spend)

    def item_key(self, record: dict[str, Any], config: dict[str, Any]) -> str:
        seed = config.get("seed") or 0
        return f"{self.name} {record['id']}" + (f" (seed {seed})" if seed else "")

    def show_memory(self, run: Any, r: int) -> list[Any]:
        """The memory after the seed problems and after each batch of order ``r``, with the final entries' records."""
        from .show import memory_parts

        return memory_parts(run, r)

    def show_example(self, run: Any, record: dict[str, Any], calls: list[dict[str, Any]]) -> tuple[list[Any], str]:
        """An item in full: its problem, the memory it was shown, each failed try's feedback."""
        from .show import example

        return example(run, record, calls)


class GymTask(StreamTask):
    """A reasoning-gym dataset as a stream of text problems."""

    def __init__(self, dataset: str):
        if dataset not in dataset_names():
            raise UsageError(str(GymError(f"unknown reasoning-gym dataset {dataset!r}")))
        self.dataset = dataset
        self.name = f"{GYM_PREFIX}{dataset}"
        self.summary = f"reasoning-gym's {dataset}, a stream of text problems scored by its own score_answer"

    @property
    def checker(self) -> Callable[..., Any] | None:
        return checker_for(self.dataset)

    def data(self, config: dict[str, Any] | None = None) -> GymData:
        try:
            return GymData(self.dataset, config)
        except GymError as exc:
            raise UsageError(str(exc)) from None


class SceneStreamTask(StreamTask):
    """Experience-Transfer's scenes of one level as a stream: its labelled episodes are the seed problems."""

    def __init__(self, level: int):
        self.level = level
        self.name = f"{SCENES_PREFIX}L{level}"
        self.summary = (
            f"Experience-Transfer level {level} as a stream: count the anomalous objects of each scene, "
            "the level's labelled episodes as seed problems"
        )

    def data(self, config: dict[str, Any] | None = None) -> SceneStream:
        from memreason.datasets.experience_transfer.stream import SceneStream, SceneStreamError  # numpy with it

        try:
            return SceneStream(self.level, config)
        except SceneStreamError as exc:
            raise UsageError(str(exc)) from None


def gym_task(name: str) -> GymTask | None:
    """The task ``rg:NAME`` names (:class:`UsageError` for an unknown dataset); None for a name not ``rg:``."""
    if not name.startswith(GYM_PREFIX):
        return None
    return GymTask(name[len(GYM_PREFIX) :])


def scene_task(name: str) -> SceneStreamTask | None:
    """The task ``et:LN`` names, Experience-Transfer level N as a stream (:class:`UsageError` for another level);
    None for a name not ``et:``."""
    if not name.startswith(SCENES_PREFIX):
        return None
    level = name[len(SCENES_PREFIX) :].upper().removeprefix("L")
    if not level.isdigit() or int(level) not in LEVELS:
        raise UsageError(f"{name}: Experience-Transfer's stream is et:L1, et:L2 or et:L3")
    return SceneStreamTask(int(level))


ON_DEMAND = {GYM_PREFIX: gym_task, SCENES_PREFIX: scene_task}  # the registry builds these when first asked for
