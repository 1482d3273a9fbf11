"""One trial of an ARC study: build the program with its knobs, bootstrap demos, solve, score (official).

The memory is frozen during a study (no ``continual_every``): every configuration reads the
same memory file (``--memory``), so tasks are independent and are solved in growing chunks,
each chunk's mean official score going to the pruner. Finished tasks are kept in
``<config dir>/examples.jsonl`` (the ``python -m eval`` record of each task), so a killed
trial continues where it stopped. Demonstrations are bootstrapped (``dspy.BootstrapFewShot``)
from ARC training tasks that are not in the evaluation split: a kept demo is a program the
solver wrote that reproduces every pair of a training task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy
import optuna

from eval.arc import ArcConfig, adapter_for, as_tokens, task_record, verify_matrix
from eval.resume import read_examples
from eval.runs import JsonlWriter, write_json
from eval.tokens import Tokens
from programs import build_program

from .demos import arc_training_tasks
from .objective import Objective, chunk_limits
from .space import split_params


def arc_score(example, prediction, trace=None) -> float:
    """The official score (first two attempts, any match per test pair) of a prediction on the example's task."""
    from eval.arc import task_scores

    attempts = getattr(prediction, "attempts", None) or []
    return float(task_scores(verify_matrix(example.task, attempts))["official_score"])


class ArcObjective(Objective):
    def __init__(self, *args, tasks, sandbox=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.tasks, self.sandbox = list(tasks), sandbox

    def arc_config(self, knobs: dict[str, Any]) -> ArcConfig:
        setup = self.setup
        return ArcConfig(program=setup.program, split=setup.split or "val100", limit=setup.limit,
                         memory=setup.memory_file, temperature=setup.temperature or 0.7, knobs=knobs)

    def build(self, knobs: dict[str, Any]):
        config = self.arc_config(knobs)
        program = build_program(config.program, **config.program_knobs(0), sandbox=self.sandbox)
        initial = config.load_memory()
        if initial is not None:
            program.use_memory(type(initial).from_json(initial.to_json()))
        if self.memory.lm is not self.task.lm:
            program.set_memory_lm(self.memory.lm)
        return program

    def evaluate(self, params: dict[str, Any], trial: optuna.Trial, config_dir: Path) -> dict[str, Any]:
        knobs, demos = split_params(params)
        program = self.build(knobs)
        adapter = adapter_for(self.task, self.memory)
        state = config_dir / "program.json"
        if state.exists():
            program.load(str(state))
        else:
            if demos:
                train = [dspy.Example(task=t).with_inputs("task")
                         for t in arc_training_tasks([t.id for t in self.tasks], limit=self.setup.train_size)]
                optimizer = dspy.BootstrapFewShot(metric=lambda e, p, t=None: arc_score(e, p) >= 1.0,
                                                  max_bootstrapped_demos=demos, max_labeled_demos=0)
                with dspy.context(lm=self.task.lm, adapter=adapter):
                    program = optimizer.compile(program, trainset=train)
            program.save(str(state))
        retries = int(knobs.get("retries", 0))
        finished = {task_id: r for (_, task_id), r in read_examples(config_dir / "examples.jsonl").items()}
        writer = JsonlWriter(config_dir / "examples.jsonl")
        outcome: dict[str, Any] = {"memory_cache": "n/a"}
        try:
            for limit in chunk_limits(len(self.tasks), self.setup.chunks):
                for index, item in enumerate(self.tasks[:limit]):
                    if item.id in finished:
                        continue
                    attempts, read, error = [], {}, None
                    with dspy.context(lm=self.task.lm, adapter=adapter):
                        try:
                            out = program(task=item)
                            attempts, read = out.attempts, out.read
                        except Exception as exc:  # one bad task must not stop the trial
                            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                    record = task_record(item, attempts, read, error, run=0, index=index, retries=retries)
                    writer.write(record)
                    finished[item.id] = record
                records = [finished[t.id] for t in self.tasks[:limit]]
                memory_tokens = sum((as_tokens(r["tokens"]["memory"]) for r in records), Tokens())
                task_tokens = sum((as_tokens(r["tokens"]["task"]) for r in records), Tokens())
                score = sum(r["scores"]["official_score"] for r in records) / len(records)
                outcome.update(accuracy=score, tokens=memory_tokens.total + task_tokens.total, examples=limit,
                               memory_tokens=memory_tokens.total, task_tokens=task_tokens.total,
                               failed=sum(1 for r in records if r["error"]))
                write_json(config_dir / "results.json", outcome)
                if limit < len(self.tasks):
                    self.report(trial, score, limit, outcome)
        finally:
            writer.close()
        return outcome
