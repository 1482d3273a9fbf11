"""Evaluate an Experience-Transfer program: consolidate memory once per run, answer every scene.

For each of ``runs`` repetitions: build the program, let it memorize the episodes
under the memory LM, then answer the test scenes under the task LM (in parallel
when ``threads`` > 1), writing one JSONL line per scene as it finishes. Results
hold accuracy (mean and std over runs), accuracy by object count, errors, and
tokens by role.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import dspy
from tqdm import tqdm

from datasets.experience_transfer import ExperienceTransferLevel, RuleTable, Scene, make_level
from programs import build_program
from signatures import Episode

from .lm import LMChoice
from .metrics import accuracy, mean_std
from .runs import JsonlWriter, write_json
from .tokens import Tokens, counting

MODALITIES = ("text", "image")


@dataclass
class ExperienceTransferConfig:
    """What one evaluation asks for (written to ``config.json``)."""

    program: str
    level: int
    modality: str = "text"
    limit: int | None = None
    runs: int = 1
    threads: int = 1
    seed: int = 0
    rules: str | None = None
    knobs: dict[str, Any] = field(default_factory=dict)

    def load_data(self) -> ExperienceTransferLevel:
        rules = RuleTable.from_json(self.rules) if self.rules else RuleTable.paper()
        return make_level(self.level, seed=self.seed, rules=rules)


def observation(item, modality: str):
    """An episode's or scene's observation in the requested modality."""
    return item.text() if modality == "text" else dspy.Image(item.image)


def evaluate_experience_transfer(
    config: ExperienceTransferConfig,
    *,
    task: LMChoice,
    memory: LMChoice,
    run_dir: Path,
    progress: bool = True,
    data: ExperienceTransferLevel | None = None,
) -> dict[str, Any]:
    """Evaluate ``config``; ``data`` is the level it describes, when the caller already built it."""
    data = data or config.load_data()
    scenes = data.test[: config.limit] if config.limit is not None else data.test
    episodes = [Episode(observation=observation(e, config.modality), label=e.label) for e in data.episodes]
    started = time.perf_counter()
    run_dir.mkdir(parents=True, exist_ok=True)
    writer = JsonlWriter(run_dir / "examples.jsonl")
    per_run: list[list[dict[str, Any]]] = []
    memory_tokens, task_tokens = Tokens(), Tokens()
    try:
        for run in range(config.runs):
            program = build_program(config.program, **config.knobs)
            with dspy.context(lm=memory.lm, adapter=memory.adapter()), counting() as spent:
                record = program.memorize(episodes, data.oracle_hypotheses)
            memory_tokens += spent
            write_json(run_dir / f"memory-run{run}.json", {**record, "tokens": spent.as_dict()})
            records = _answer_all(program, data, scenes, config, task, run, writer, progress)
            task_tokens += sum((Tokens(**r["tokens"]) for r in records), Tokens())
            per_run.append(records)
    finally:
        writer.close()
    return _results(config, data, per_run, task, memory, memory_tokens, task_tokens, time.perf_counter() - started)


def _answer_all(program, data, scenes, config, task: LMChoice, run: int, writer: JsonlWriter, progress: bool):
    adapter = task.adapter()

    def answer(scene: Scene) -> dict[str, Any]:
        prediction, error = None, None
        with dspy.context(lm=task.lm, adapter=adapter), counting() as spent:
            try:
                out = program(query=data.query, scene=observation(scene, config.modality))
                prediction = int(out.count)
            except Exception as exc:  # one bad answer must not stop the run
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        record = {
            "run": run,
            "id": scene.id,
            "objects": len(scene.objects),
            "target": scene.target,
            "prediction": prediction,
            "correct": prediction == scene.target,
            "tokens": {"prompt": spent.prompt, "completion": spent.completion, "calls": spent.calls},
            "error": error,
        }
        writer.write(record)
        return record

    records = []
    with ThreadPoolExecutor(max_workers=config.threads) as pool:
        futures = [pool.submit(answer, scene) for scene in scenes]
        bar = tqdm(total=len(futures), desc=f"{config.program} L{config.level} run {run + 1}/{config.runs}",
                   disable=not progress, unit="scene", dynamic_ncols=True)
        with bar:
            for future in as_completed(futures):
                records.append(future.result())
                correct = sum(r["correct"] for r in records)
                bar.set_postfix(acc=f"{correct / len(records):.0%}")
                bar.update()
    order = {scene.id: i for i, scene in enumerate(scenes)}
    return sorted(records, key=lambda r: order[r["id"]])


def _results(config, data, per_run, task, memory, memory_tokens, task_tokens, seconds) -> dict[str, Any]:
    run_accuracy = [accuracy([r["prediction"] for r in recs], [r["target"] for r in recs]) for recs in per_run]
    mean, std = mean_std(run_accuracy)
    by_objects: dict[str, float] = {}
    for n in sorted({r["objects"] for r in per_run[0]}):
        values = [accuracy(*zip(*[(r["prediction"], r["target"]) for r in recs if r["objects"] == n])) for recs in per_run]
        by_objects[str(n)] = mean_std(values)[0]
    errors: dict[str, int] = {}
    for recs in per_run:
        for r in recs:
            if r["error"]:
                kind = r["error"].split(":")[0]
                errors[kind] = errors.get(kind, 0) + 1
    results = {
        "program": config.program,
        "task": "experience_transfer",
        "level": config.level,
        "modality": config.modality,
        "lm": task.spec,
        "memory_lm": memory.spec,
        "examples": len(per_run[0]),
        "runs": config.runs,
        "accuracy": {"mean": mean, "std": std, "per_run": run_accuracy},
        "accuracy_by_objects": by_objects,
        "errors": errors,
        "tokens": {"memory": memory_tokens.as_dict(), "task": task_tokens.as_dict()},
        "wall_seconds": round(seconds, 2),
        "config": asdict(config),
    }
    engine = getattr(task.lm, "engine", None)
    if task.local and hasattr(engine, "stats"):
        results["engine"] = engine.stats.as_dict()
    return results
