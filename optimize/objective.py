"""One trial of an Experience-Transfer study: build, place demos, restore or build memory, answer, score.

    objective = ExperienceTransferObjective(setup, space, study_dir)
    objective(trial)   # accuracy, or (accuracy, tokens) for a two-objective study

A trial is a configuration (its parameters); its work lives in
``<study>/configs/<hash>/``: ``program.json`` (the DSPy state with its demos),
``memory-run0.json``, ``examples.jsonl``, ``results.json``, the same files a
``python -m eval`` run writes. So a trial killed mid-way (or one a retry or another
worker repeats) continues from the scenes it finished, and two trials of one
configuration never answer a scene twice.

The scenes are answered in growing chunks (``chunks``); after each chunk a
single-objective trial reports its accuracy so far to the pruner, which may stop it.
Tokens count everything the configuration costs: the memory build (even when the
memory came from the cache: it is this configuration's price) and the answers.
"""

from __future__ import annotations

import math
import os
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import dspy
import optuna

from memreason.datasets.experience_transfer import ExperienceTransferLevel
from memreason.eval.experience_transfer.run import (
    ExperienceTransferConfig,
    evaluate_experience_transfer,
    level_episodes,
    observation,
)
from memreason.eval.harness.runs import read_json, write_json
from memreason.eval.harness.session import RunSession
from memreason.files import save_via
from memreason.lm import LMChoice
from memreason.lm.faults import RetryPolicy
from memreason.lm.tokens import Meter, metering
from memreason.programs import build_program
from memreason.signatures import Episode

from .demos import place_demos, scene_examples, training_level
from .memory_cache import MemoryCache, digest, file_lock
from .space import Space, split_params


@dataclass
class Setup:
    """What every trial of a study shares: the program, the data, the LMs' names, how to score."""

    program: str
    level: int | None = None
    split: str | None = None  # ARC
    modality: str = "text"
    rules: str | None = None
    seed: int = 0
    limit: int | None = None
    objectives: tuple[str, ...] = ("accuracy",)
    chunks: int = 3
    demo_source: str = "labeled"
    train_size: int = 40
    threads: int = 1
    lm: str = "embedded"
    memory_lm: str = "embedded"
    temperature: float = 0.0
    max_tokens: int | None = None
    memory_file: str | None = None  # ARC: the concept memory the program reads
    program_state: str | None = None  # a DSPy state every trial's program starts from (a compiled consolidator)
    program_state_sha256: str | None = None
    task: str | None = None  # a problem task's name (None: Experience-Transfer or ARC, as studies have always had)
    lm_args: dict[str, Any] | None = None  # the task LM's other settings (--lm-arg; None: none)
    memory_lm_args: dict[str, Any] | None = None  # the memory LM's (--memory-lm-arg)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def multi(self) -> bool:
        return len(self.objectives) > 1

    def identity(self) -> dict[str, Any]:
        """What decides a configuration's results besides its parameters."""
        out = asdict(self)
        for key in ("threads", "chunks", "objectives"):
            out.pop(key)
        # absent unless given: studies from before keep their digests
        for key in ("program_state", "program_state_sha256", "task", "lm_args", "memory_lm_args"):
            if not out[key]:
                out.pop(key)
        out.pop("program_state", None)  # the state's content (its sha256) decides, not where the file lies
        return out


def chunk_limits(total: int, chunks: int) -> list[int]:
    """Growing prefix sizes ending at ``total``: ``chunk_limits(30, 3) == [10, 20, 30]``."""
    chunks = max(1, min(chunks, total))
    return sorted({math.ceil(total * i / chunks) for i in range(1, chunks + 1)})


class Objective:
    """Shared by the objectives of every kind of task: the trial loop around ``evaluate(params, trial)``."""

    def __init__(
        self,
        setup: Setup,
        space: Space,
        study_dir: Path,
        task: LMChoice,
        memory: LMChoice,
        policy: RetryPolicy | None = None,
        on_trial: Callable[[int, dict[str, Any]], None] | None = None,
    ):
        self.setup, self.space, self.study_dir = setup, space, Path(study_dir)
        self.task, self.memory = task, memory
        self.policy = policy or RetryPolicy()
        self.memories = MemoryCache(self.study_dir / "memories")
        self.on_trial = on_trial  # called as (trial number, params) when a trial starts work (tests, logs)

    def __call__(self, trial: optuna.Trial):
        params = self.space.suggest(trial)
        if self.on_trial:
            self.on_trial(trial.number, params)
        config_dir = self.study_dir / "configs" / digest({"params": params, "setup": self.setup.identity()})
        trial.set_user_attr("config_dir", str(config_dir))
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
        started = time.perf_counter()
        try:
            with file_lock(config_dir / ".lock"):  # one worker per configuration; a second one reads its results
                write_json(config_dir / "params.json", params)
                outcome = self.evaluate(params, trial, config_dir)
        finally:
            trial.set_user_attr("wall_seconds", round(time.perf_counter() - started, 2))
        for key, value in outcome.items():
            trial.set_user_attr(key, value)
        if self.setup.multi:
            return outcome["accuracy"], outcome["tokens"]
        return outcome["accuracy"]

    def report(self, trial: optuna.Trial, value: float, step: int, outcome: dict[str, Any]) -> None:
        """Intermediate accuracy to the pruner (single-objective studies only)."""
        if self.setup.multi:
            return
        trial.report(value, step)
        if trial.should_prune():
            for key, v in outcome.items():
                trial.set_user_attr(key, v)
            raise optuna.TrialPruned(f"accuracy {value:.3f} after {step} examples")

    def evaluate(self, params: dict[str, Any], trial: optuna.Trial, config_dir: Path) -> dict[str, Any]:
        raise NotImplementedError


class ExperienceTransferObjective(Objective):
    def __init__(self, *args, data: ExperienceTransferLevel, **kwargs):
        super().__init__(*args, **kwargs)
        self.data = data
        self._train = None

    def trainset(self) -> list[dspy.Example]:
        if self._train is None:
            level = training_level(self.data, seed=self.setup.seed)
            self._train = scene_examples(level, lambda s: observation(s, self.setup.modality), limit=self.setup.train_size)
        return self._train

    def episodes(self) -> list[Episode]:
        return level_episodes(self.data.episodes, self.setup.modality)

    def evaluate(self, params: dict[str, Any], trial: optuna.Trial, config_dir: Path) -> dict[str, Any]:
        knobs, demos = split_params(params)
        setup = self.setup
        program = build_program(setup.program, **knobs)
        if setup.program_state:  # a compiled consolidator: the trial's own knobs shape the reasoner
            program.load_consolidation(setup.program_state)
        memory_path = config_dir / "memory-run0.json"
        cache = "kept"
        if not memory_path.exists():
            cache = self.fetch_memory(program, knobs, memory_path)
        state = config_dir / "program.json"
        if not state.exists():
            if demos and setup.demo_source == "bootstrap":
                program.restore(self.episodes(), read_json(memory_path))
            with dspy.context(lm=self.task.lm, adapter=self.task.adapter()):
                place_demos(program, self.trainset(), demos, source=setup.demo_source)
            save_via(state, lambda tmp: program.save(str(tmp)))
        total = len(self.data.test) if setup.limit is None else min(setup.limit, len(self.data.test))
        outcome: dict[str, Any] = {"memory_cache": cache}
        for limit in chunk_limits(total, setup.chunks):
            config = ExperienceTransferConfig(
                program=setup.program,
                level=setup.level,
                modality=setup.modality,
                limit=limit,
                seed=setup.seed,
                rules=setup.rules,
                threads=setup.threads,
                knobs=knobs,
                program_state=str(state),
            )
            results = evaluate_experience_transfer(
                config, task=self.task, memory=self.memory, run_dir=config_dir, progress=False, data=self.data, policy=self.policy
            )
            write_json(config_dir / "results.json", results)
            tokens = results["tokens"]["memory"]["total"] + results["tokens"]["task"]["total"]
            outcome.update(
                accuracy=results["accuracy"]["mean"],
                tokens=tokens,
                examples=limit,
                memory_tokens=results["tokens"]["memory"]["total"],
                task_tokens=results["tokens"]["task"]["total"],
                failed=sum(results["failures"].values()),
            )
            if limit < total:
                self.report(trial, outcome["accuracy"], limit, outcome)
        return outcome

    def fetch_memory(self, program, knobs: dict[str, Any], memory_path: Path) -> str:
        """Copy the cached memory for these knobs into ``memory_path``, or build it and cache it: "hit" or "built"."""
        setup = self.setup
        identity = {
            "program": setup.program,
            "level": setup.level,
            "seed": setup.seed,
            "modality": setup.modality,
            "rules": setup.rules,
            "memory_lm": setup.memory_lm,
            "temperature": setup.temperature,
            "max_tokens": setup.max_tokens,
        }
        if setup.program_state_sha256:  # a compiled consolidator writes other memories (absent: the keys of before)
            identity["program_state_sha256"] = setup.program_state_sha256
        key = self.memories.key(knobs=knobs, **identity)
        with self.memories.holding(key):
            record = self.memories.get(key)
            if record is not None:
                write_json(memory_path, record)
                return "hit"
            record = build_memory(program, self.episodes(), self.data, self.memory, self.policy)
            self.memories.put(key, record, identity={**identity, "knobs": knobs})
            write_json(memory_path, record)
            return "built"


def build_memory(
    program, episodes: list[Episode], data: ExperienceTransferLevel, memory: LMChoice, policy: RetryPolicy
) -> dict[str, Any]:
    """``program.memorize`` under the memory LM, metered: the record ``python -m eval`` saves as memory-run0.json."""
    meter = Meter(root=program)
    started = time.perf_counter()
    with RunSession.start(memory, memory, policy=policy).memory_context(), metering(meter):
        record = program.memorize(episodes, data.oracle_hypotheses)
    return {
        **record,
        **meter.record(),
        "tokens": meter.tokens().as_dict(),
        "wall_seconds": round(time.perf_counter() - started, 2),
    }
