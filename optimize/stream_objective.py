"""One trial of a study on a stream task (``rg:NAME``, ``et:LN``, a stream task of your own): the task's own run of
the stream, scored.

    settings = StreamSettings(size=20, seed_size=5)
    objective = StreamObjective(setup, space, study_dir, task_lm, memory_lm, benchmark=tuning, settings=settings)
    objective(trial)   # the stream's accuracy over the tuning items, or (accuracy, tokens)

As on a problem task (:class:`memreason.optimize.problem_objective.ProblemObjective`), a trial writes its knobs as
``<study>/configs/<hash>/knobs.json`` and runs ``python -m eval <program> --task T --config knobs.json`` through
the task (:meth:`memreason.eval.tasks.Task.run`) into ``<study>/configs/<hash>/run/``, so a killed trial continues
from the batch it stopped in. Its run options (``batch``, ``verify``, ``verify_margin``) come from the trial's
parameters where the space has them, else from the study's settings (the defaults of ``python -m eval``). The items
are the tuning stream's (:class:`memreason.optimize.held_out.TuningStream`), never those a user reports. Memory
is built along the stream inside the run, so trials share none and no demonstrations are placed; the run is one
piece, so the pruner sees no intermediate score.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memreason.eval.stream.options import StreamOptions

from .problem_objective import ProblemObjective
from .space import run_options

__all__ = ["StreamObjective", "StreamSettings"]


@dataclass(frozen=True)
class StreamSettings:
    """How a study runs the stream (``python -m eval``'s stream options; its defaults, fewer tuning items): those a
    trial's parameters do not set."""

    task_config: str = "{}"  # the dataset's own config, a JSON object's text
    size: int = 20  # tuning items
    seed_size: int = 10
    answer: str = "text"
    retries: int = 2
    learn_from: str | None = None  # None: check where the task has one, else self
    lesson: str = "reasoning"
    batch: int = 10
    verify: int = 0
    verify_margin: int = 1
    order_seed: int = 0
    orders: int = 1
    report_size: int = 50  # the reported items kept out of tuning: the first N of the report seed's stream

    def identity(self) -> dict[str, Any]:
        return asdict(self)


class StreamObjective(ProblemObjective):
    def __init__(self, *args, benchmark: Any, settings: StreamSettings, **kwargs):
        super().__init__(*args, benchmark=benchmark, **kwargs)
        self.settings = settings

    def options(self, knobs_file: Path, run_dir: Path, params: dict[str, Any]) -> StreamOptions:
        """What ``python -m eval <program> --task T --seed <tuning seed> --config <knobs_file> --out <run_dir>`` with
        the trial's run options asks for: the study's settings, then the trial's parameters over them."""
        stream = {k: v for k, v in asdict(self.settings).items() if k != "report_size"}
        return StreamOptions(
            seed=self.benchmark.seed, **{**stream, **run_options(params)}, **self.study_options(knobs_file, run_dir)
        )
