"""One trial of an ARC study: build the program with its knobs, bootstrap demos, solve, score (official).

The memory is frozen during a study (no ``continual_every``): every configuration reads the
same memory file (``--memory``), so tasks are independent and are solved in growing chunks,
each chunk's mean official score going to the pruner. Each chunk is a ``python -m eval`` run
(:func:`memreason.eval.arc.evaluate_arc`) in the configuration's directory, with the program's state
(``program.json``, its demos) loaded: the same records (``examples.jsonl``), LM fault
retries, parallel tasks (``--threads``) and token counts, cached answers included, so a
configuration costs the same whichever trial answered first. A killed trial continues
from the tasks it finished. Demonstrations are bootstrapped (``dspy.BootstrapFewShot``)
from ARC training tasks that are not in the evaluation split: a kept demo is a program the
solver wrote that reproduces every pair of a training task.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import dspy
import optuna

from memreason.eval.arc import KNOB_FIELDS, ArcConfig, evaluate_arc, verify_matrix
from memreason.eval.harness.runs import write_json
from memreason.eval.harness.session import shared_adapter
from memreason.files import save_via
from memreason.programs import build_program

from .demos import arc_training_tasks
from .objective import Objective, chunk_limits
from .space import split_params


def arc_score(example, prediction, trace=None) -> float:
    """The official score (first two attempts, any match per test pair) of a prediction on the example's task."""
    from memreason.eval.arc import task_scores

    attempts = getattr(prediction, "attempts", None) or []
    return float(task_scores(verify_matrix(example.task, attempts))["official_score"])


def save_state(program: dspy.Module, path: Path) -> None:
    """``program.save`` with no predictor's LM in the file (set them again after loading).

    A memory LM set on the memory predictors would otherwise be saved with them: a custom
    engine (scripted, in-process) cannot be saved at all, and a loaded one would replace
    the LM the study or ``python -m eval`` gives the program.
    """
    predictors = [p for _, p in program.named_predictors()]
    lms = [p.lm for p in predictors]
    for predictor in predictors:
        predictor.lm = None
    try:
        save_via(path, lambda tmp: program.save(str(tmp)))
    finally:
        for predictor, lm in zip(predictors, lms):
            predictor.lm = lm


class ArcObjective(Objective):
    def __init__(self, *args, tasks, sandbox=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.tasks, self.sandbox = list(tasks), sandbox

    def arc_config(self, knobs: dict[str, Any]) -> ArcConfig:
        """The ``python -m eval`` config of these knobs: those it has flags for set them, the rest go to the constructor."""
        setup = self.setup
        fields = {"temperature": setup.temperature or 0.7, **{k: v for k, v in knobs.items() if k in KNOB_FIELDS}}
        return ArcConfig(
            program=setup.program,
            split=setup.split or "val100",
            limit=setup.limit,
            memory=setup.memory_file,
            threads=setup.threads,
            **fields,
            knobs={k: v for k, v in knobs.items() if k not in KNOB_FIELDS},
        )

    def build(self, knobs: dict[str, Any]):
        """The program with these knobs, the memory file and the memory LM (what bootstrapping runs)."""
        config = self.arc_config(knobs)
        program = build_program(config.program, **config.program_knobs(0), sandbox=self.sandbox)
        initial = config.load_memory()
        if initial is not None:
            program.use_memory(type(initial).from_json(initial.to_json()))
        if self.memory.lm is not self.task.lm:
            program.set_memory_lm(self.memory.lm)
        return program

    def bootstrap(self, program, demos: int):
        """``program`` with up to ``demos`` demonstrations from training tasks it solves."""
        train = [
            dspy.Example(task=t).with_inputs("task")
            for t in arc_training_tasks([t.id for t in self.tasks], limit=self.setup.train_size)
        ]
        optimizer = dspy.BootstrapFewShot(
            metric=lambda e, p, t=None: arc_score(e, p) >= 1.0, max_bootstrapped_demos=demos, max_labeled_demos=0
        )
        with dspy.context(lm=self.task.lm, adapter=shared_adapter(self.task, self.memory)):
            return optimizer.compile(program, trainset=train)

    def evaluate(self, params: dict[str, Any], trial: optuna.Trial, config_dir: Path) -> dict[str, Any]:
        knobs, demos = split_params(params)
        state = config_dir / "program.json"
        if not state.exists():
            program = self.build(knobs)
            save_state(self.bootstrap(program, demos) if demos else program, state)
        config = replace(self.arc_config(knobs), program_state=str(state))
        initial = config.load_memory()
        outcome: dict[str, Any] = {"memory_cache": "n/a"}
        for limit in chunk_limits(len(self.tasks), self.setup.chunks):
            results = evaluate_arc(
                config,
                task=self.task,
                memory=self.memory,
                run_dir=config_dir,
                sandbox=self.sandbox,
                progress=False,
                tasks=self.tasks[:limit],
                initial_memory=initial,
                policy=self.policy,
            )
            write_json(config_dir / "results.json", results)
            memory_tokens, task_tokens = (results["tokens"][role]["total"] for role in ("memory", "task"))
            outcome.update(
                accuracy=results["official_score"],
                tokens=memory_tokens + task_tokens,
                examples=limit,
                memory_tokens=memory_tokens,
                task_tokens=task_tokens,
                failed=sum(results["failures"].values()),
            )
            if limit < len(self.tasks):
                self.report(trial, outcome["accuracy"], limit, outcome)
        return outcome
