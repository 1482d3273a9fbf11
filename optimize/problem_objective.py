"""One trial of a study on a problem task (ACRE, List Functions, a task of your own): the task's own run, scored.

    objective = ProblemObjective(setup, space, study_dir, task_lm, memory_lm, benchmark=get_task("acre"))
    objective(trial)   # the task's headline score (accuracy), or (accuracy, tokens) for a two-objective study

A trial writes its knobs as ``<study>/configs/<hash>/knobs.json`` (``{"program": ..., "knobs": {...}}``, what
``python -m eval --config`` reads) and evaluates the program with them through the task
(:meth:`memreason.eval.tasks.Task.run`), the run in ``<study>/configs/<hash>/run/``: the files a
``python -m eval <program> --task T`` run writes, so a killed trial (or one a retry or another worker repeats)
continues from the queries it answered. The run resolves the study's LMs (never new ones) and shares the study's
DSPy cache. Its score is the task's headline (:meth:`Task.headline_value`); its tokens, the memory's and the
answers' together. A problem's memory is built from its own episodes inside the run, so no memory is shared
across trials, and no demonstrations are placed; the run is one piece, so the pruner sees no intermediate score.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from memreason.eval.harness.lms import resolving_with
from memreason.eval.harness.options import EvaluateOptions
from memreason.eval.harness.runs import read_json, write_json
from memreason.lm import LMChoice
from memreason.lm.faults import RunAborted

from .lms import resolve
from .objective import Objective
from .space import split_params

__all__ = ["ProblemObjective"]


class ProblemObjective(Objective):
    def __init__(self, *args, benchmark: Any, **kwargs):
        super().__init__(*args, **kwargs)
        self.benchmark = benchmark

    def resolve(self, spec: str | None, **choose: Any) -> LMChoice:
        """The study's own LMs for their names; any other through optimize's resolver."""
        known = {self.task.spec: self.task, self.memory.spec: self.memory}
        return known.get(spec or "embedded") or resolve(spec, **choose)

    def options(self, knobs_file: Path, run_dir: Path, params: dict[str, Any]) -> EvaluateOptions:
        """What ``python -m eval <program> --task T --config <knobs_file> --out <run_dir>`` asks for."""
        return EvaluateOptions(limit=self.setup.limit, seed=self.setup.seed, **self.study_options(knobs_file, run_dir))

    def study_options(self, knobs_file: Path, run_dir: Path) -> dict[str, Any]:
        """The options every trial's run takes from the study: the program, the task, the knobs file, the run's
        directory, the study's LMs and their settings, its cache and threads, and no progress bar or report."""
        setup = self.setup
        return dict(
            program=setup.program,
            task=self.benchmark.name,
            out=run_dir,
            config=knobs_file,
            lm=self.task.spec,
            memory_lm=None if self.memory is self.task else self.memory.spec,
            temperature=setup.temperature,
            max_tokens=setup.max_tokens,
            lm_args=dict(setup.lm_args or {}),
            memory_lm_args=dict(setup.memory_lm_args or {}),
            cache=self.study_dir / "dspy_cache",
            threads=setup.threads,
            lm_retries=self.policy.retries,
            backoff=self.policy.backoff,
            no_progress=True,
            no_report=True,
        )

    def evaluate(self, params: dict[str, Any], trial: optuna.Trial, config_dir: Path) -> dict[str, Any]:
        knobs, _ = split_params(params)
        knobs_file = config_dir / "knobs.json"
        write_json(knobs_file, {"program": self.setup.program, "knobs": knobs})
        run_dir = config_dir / "run"
        try:
            with resolving_with(self.resolve):
                results = self.benchmark.run(self.options(knobs_file, run_dir, params)).results
        except RunAborted:  # every query failed: the run's results are written, and score what they score
            if not (run_dir / "results.json").exists():
                raise
            results = read_json(run_dir / "results.json")
        memory_tokens, task_tokens = (results["tokens"][role]["total"] for role in ("memory", "task"))
        return {
            "memory_cache": "n/a",
            "accuracy": self.benchmark.headline_value(results) or 0.0,
            "tokens": memory_tokens + task_tokens,
            "examples": results.get("examples"),
            "memory_tokens": memory_tokens,
            "task_tokens": task_tokens,
            "failed": sum(results.get("failures", {}).values()),
        }
